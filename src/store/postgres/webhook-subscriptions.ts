import type { Sql } from 'postgres';

/**
 * Webhook subscriptions in the database, shared by every instance: each as the JSON document that
 * webhooks.json holds for it (its signing secrets in the clear, as there: every delivery is signed
 * with them), beside its cursor and the lease of the instance delivering it (webhook-cursors.ts).
 */
export const WEBHOOK_TABLES: readonly string[] = [
  'CREATE TABLE petstore.webhook_subscriptions (id text PRIMARY KEY, document text NOT NULL)',
  // The last pet delivered (or passed over), the last replay applied, and who delivers until when.
  `CREATE TABLE petstore.webhook_cursors (
    subscription_id text PRIMARY KEY REFERENCES petstore.webhook_subscriptions (id) ON DELETE CASCADE,
    last bigint NOT NULL CHECK (last BETWEEN 0 AND 9007199254740991),
    replay text,
    owner text,
    expires timestamptz
  )`,
];

/** One subscription as stored: its id and its document (the JSON of a webhooks.json entry). */
export interface StoredSubscription {
  id: string;
  document: string;
}

export async function readSubscriptions(sql: Sql): Promise<StoredSubscription[]> {
  return [...(await sql<StoredSubscription[]>`SELECT id, document FROM petstore.webhook_subscriptions ORDER BY id`)];
}

/**
 * Replaces the subscriptions with what `change` makes of them, in one transaction that holds every
 * other change back. A new subscription's cursor starts after the last pet id handed out: it is for new pets.
 */
export function updateSubscriptions<T>(
  sql: Sql,
  change: (stored: StoredSubscription[]) => { stored?: StoredSubscription[]; result: T },
): Promise<T> {
  // The driver's type unwraps arrays in the result; `T` is returned as it is.
  return sql.begin(async (tx) => {
    await tx`LOCK TABLE petstore.webhook_subscriptions IN EXCLUSIVE MODE`;
    const current = [
      ...(await tx<StoredSubscription[]>`SELECT id, document FROM petstore.webhook_subscriptions ORDER BY id`),
    ];
    const { stored, result } = change(current);
    if (stored === undefined) return result;
    const kept = stored.map((s) => s.id);
    await tx`DELETE FROM petstore.webhook_subscriptions WHERE NOT (id = ANY(${`{${kept.join(',')}}`}::text[]))`;
    for (const s of stored) {
      await tx`INSERT INTO petstore.webhook_subscriptions (id, document) VALUES (${s.id}, ${s.document})
        ON CONFLICT (id) DO UPDATE SET document = excluded.document`;
    }
    await tx`INSERT INTO petstore.webhook_cursors (subscription_id, last)
      SELECT id, (SELECT last_id FROM petstore.pet_ids) FROM petstore.webhook_subscriptions
      ON CONFLICT (subscription_id) DO NOTHING`;
    return result;
  }) as Promise<T>;
}
