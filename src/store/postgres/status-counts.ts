import type { Sql } from 'postgres';
import type { PetStatus } from '../../pet/contract.js';
import type { StatusCounts } from '../store.js';

/** The pets per status, as the database counts them now: one pass over the table, O(n). */
export async function countByStatus(sql: Sql): Promise<StatusCounts> {
  const rows = await sql<{ status: PetStatus | null; count: string }[]>`SELECT status, count(*)::text AS count FROM petstore.pets GROUP BY status`;
  const counts: StatusCounts = { available: 0, pending: 0, sold: 0, none: 0 };
  for (const row of rows) counts[row.status ?? 'none'] = Number(row.count);
  return counts;
}
