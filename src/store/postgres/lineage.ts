import type { Sql } from 'postgres';

/** Which database history a connection reaches, and how far along it: what a failover or a restore changes. */
export interface Lineage {
  /** pg_control_system(): made by initdb, the same on a standby made from its primary. */
  system: string;
  /** The WAL timeline being written: a promoted standby starts a new one. */
  timeline: string;
  /** The WAL position, in bytes: a restored copy of the cluster directory is behind the one seen before. */
  position: bigint;
}

/** The highest id handed out and the WAL position, in one statement: what the commit watch reads every second. */
export async function readHighestIdAndPosition(sql: Sql): Promise<{ id: number; position: bigint }> {
  const [row] = await sql<[{ id: string; position: string }]>`
    SELECT last_id::text AS id, (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS position FROM petstore.pet_ids`;
  return { id: Number(row?.id ?? 0), position: BigInt(row?.position ?? 0) };
}

export async function readLineage(sql: Sql): Promise<Lineage> {
  const [row] = await sql<[{ system: string; timeline: string; position: string }]>`
    SELECT system_identifier::text AS system, substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AS timeline,
      (pg_current_wal_lsn() - '0/0'::pg_lsn)::text AS position
    FROM pg_control_system()`;
  if (row === undefined) throw new Error('pg_control_system() returned no row');
  return { system: row.system, timeline: row.timeline, position: BigInt(row.position) };
}

/** Why `now` is not the history `before` went on to, or undefined when it is. */
export function divergence(before: Lineage, now: Lineage): string | undefined {
  if (now.system !== before.system) return `its system identifier changed from ${before.system} to ${now.system}`;
  if (now.timeline !== before.timeline) return `its WAL timeline changed from ${before.timeline} to ${now.timeline}`;
  if (now.position < before.position) {
    return `its WAL position went back from ${before.position} to ${now.position} bytes`;
  }
  return undefined;
}
