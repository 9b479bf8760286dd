import type { Sql } from 'postgres';

/**
 * Where each subscription stands, and which instance delivers it: a lease row per subscription in
 * `petstore.webhook_cursors`, its expiry on the database's clock. A lease, not a session advisory lock:
 * an instance whose connection hangs, or whose host is gone, holds an advisory lock until the database
 * notices the dead connection (TCP keepalive, hours by default); a lease ends after its seconds whatever happened.
 */

/** A subscription this instance now holds: its document and the cursor stored for it. */
export interface LeasedSubscription {
  id: string;
  document: string;
  last: number;
  replay: string | null;
}

/**
 * Renews the leases `owner` holds and takes those free or expired, for `seconds`; every subscription
 * it then holds. Rows held by a live lease of another owner are skipped (rechecked after its commit).
 */
export async function leaseSubscriptions(sql: Sql, owner: string, seconds: number): Promise<LeasedSubscription[]> {
  return [
    ...(await sql<LeasedSubscription[]>`
      WITH leased AS (
        UPDATE petstore.webhook_cursors SET owner = ${owner}, expires = now() + make_interval(secs => ${seconds})
        WHERE owner = ${owner} OR owner IS NULL OR expires < now()
        RETURNING subscription_id, last, replay
      )
      SELECT s.id, s.document, l.last::float8 AS last, l.replay
      FROM leased l JOIN petstore.webhook_subscriptions s ON s.id = l.subscription_id
      ORDER BY s.id`),
  ];
}

/** Moves the cursor of `id` if `owner` still holds its lease; whether it did. */
export async function moveCursor(
  sql: Sql,
  owner: string,
  id: string,
  last: number,
  replay: string | null,
): Promise<boolean> {
  const moved = await sql`UPDATE petstore.webhook_cursors SET last = ${last}, replay = ${replay}
    WHERE subscription_id = ${id} AND owner = ${owner}`;
  return moved.count > 0;
}

/** Gives up every lease of `owner`, so that another instance takes its subscriptions at its next look. */
export async function releaseLeases(sql: Sql, owner: string): Promise<void> {
  await sql`UPDATE petstore.webhook_cursors SET owner = NULL, expires = NULL WHERE owner = ${owner}`;
}
