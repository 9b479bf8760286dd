import type { Sql, TransactionSql } from 'postgres';
import type { Scope } from '../../pet/contract.js';

/**
 * API keys in the database, shared by every instance: the same records as the key file (the key's
 * SHA-256 hash, never the key), in `petstore.api_keys`.
 */
export interface KeyRecord {
  id: string;
  label: string;
  created: string;
  sha256: string;
  /** Absent (NULL): every scope. */
  scopes?: Scope[];
  /** Absent (NULL): the server's quota. */
  rateLimit?: { requests: number; seconds: number };
}

interface KeyRow {
  id: string;
  label: string;
  created: string;
  sha256: string;
  /** The text[] as its elements joined by ',' (scope names hold none), NULL for every scope. */
  scopes: string | null;
  rate_limit_requests: number | null;
  rate_limit_seconds: number | null;
}

function fromRow(row: KeyRow): KeyRecord {
  const key: KeyRecord = { id: row.id, label: row.label, created: row.created, sha256: row.sha256 };
  if (row.scopes !== null) key.scopes = row.scopes.split(',') as Scope[];
  if (row.rate_limit_requests !== null && row.rate_limit_seconds !== null)
    key.rateLimit = { requests: row.rate_limit_requests, seconds: row.rate_limit_seconds };
  return key;
}

export async function readKeys(sql: Sql): Promise<KeyRecord[]> {
  const rows = await sql<KeyRow[]>`
    SELECT id, label, created, sha256, array_to_string(scopes, ',') AS scopes, rate_limit_requests, rate_limit_seconds
    FROM petstore.api_keys ORDER BY created, id`;
  return rows.map(fromRow);
}

/**
 * Inserts `key`; with `skipTaken`, not when a key with its id is there. Its scopes go as an array
 * literal cast to text[] (the driver sends a JS array as text unless it has fetched the types).
 */
function insert(sql: Sql | TransactionSql, key: KeyRecord, skipTaken = false): Promise<{ count: number }> {
  const scopes = key.scopes === undefined ? null : `{${key.scopes.join(',')}}`;
  return sql`
    INSERT INTO petstore.api_keys (id, label, created, sha256, scopes, rate_limit_requests, rate_limit_seconds)
    VALUES (${key.id}, ${key.label}, ${key.created}, ${key.sha256}, ${scopes}::text[],
      ${key.rateLimit?.requests ?? null}, ${key.rateLimit?.seconds ?? null})
    ${skipTaken ? sql`ON CONFLICT (id) DO NOTHING` : sql``}`;
}

/** Inserts `key` in the transaction `tx` unless a key with its id is there; whether it was inserted. */
export async function insertKey(tx: TransactionSql, key: KeyRecord): Promise<boolean> {
  return (await insert(tx, key, true)).count > 0;
}

export async function addKey(sql: Sql, key: KeyRecord): Promise<void> {
  await sql.begin(async (tx) => {
    await insert(tx, key);
    await tx`INSERT INTO petstore.api_keys_initialised DEFAULT VALUES ON CONFLICT DO NOTHING`;
  });
}

/** Whether a key with `id` existed (and is now gone). */
export async function removeKey(sql: Sql, id: string): Promise<boolean> {
  const removed = await sql`DELETE FROM petstore.api_keys WHERE id = ${id}`;
  return removed.count > 0;
}

/**
 * Stores `key` only if no key was ever created in this database (as a first start does with no key
 * file). Instances starting together wait for one another on the marker row, so only one key is made.
 */
export function addFirstKey(sql: Sql, key: KeyRecord): Promise<boolean> {
  return sql.begin(async (tx) => {
    const marked = await tx`INSERT INTO petstore.api_keys_initialised DEFAULT VALUES ON CONFLICT DO NOTHING`;
    if (marked.count === 0) return false;
    await insert(tx, key);
    return true;
  });
}
