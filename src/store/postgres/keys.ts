import type { Sql } from 'postgres';

/**
 * API keys in the database, shared by every instance: the same records as the key file (the key's
 * SHA-256 hash, never the key), in `petstore.api_keys`.
 */
export interface KeyRecord {
  id: string;
  label: string;
  created: string;
  sha256: string;
}

export function readKeys(sql: Sql): Promise<KeyRecord[]> {
  return sql<KeyRecord[]>`SELECT id, label, created, sha256 FROM petstore.api_keys ORDER BY created, id`;
}

export async function addKey(sql: Sql, key: KeyRecord): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`INSERT INTO petstore.api_keys ${tx(key, 'id', 'label', 'created', 'sha256')}`;
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
    await tx`INSERT INTO petstore.api_keys ${tx(key, 'id', 'label', 'created', 'sha256')}`;
    return true;
  });
}
