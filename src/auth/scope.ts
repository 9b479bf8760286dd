import { scrypt } from 'node:crypto';

// scrypt's cost: some tens of milliseconds once per API key and process, which makes each guess
// at a weak key as dear for someone who holds a copy of the data files.
const COST = { N: 2 ** 14, r: 8, p: 1 };
const SALT = 'petstore idempotency scope v1';

const scopes = new Map<string, Promise<string>>();

/**
 * (A "scope" here is where an API key's idempotency records live, not a permission: those are
 * key-scopes.ts. The word stays, as it is in the stored records and their format.)
 *
 * The name under which things scoped to one API key (idempotency keys) are stored: derived from the
 * key's identity with scrypt, so that the data files and their backups hold nothing a weak key could
 * be checked against quickly. Computed once per identity (the accepted keys are few) and cached.
 */
export function storedScope(identity: string): Promise<string> {
  let scope = scopes.get(identity);
  if (scope === undefined) {
    scope = new Promise((resolve, reject) => {
      scrypt(identity, SALT, 16, COST, (error, derived) =>
        error === null ? resolve(derived.toString('base64url')) : reject(error),
      );
    });
    scopes.set(identity, scope);
  }
  return scope;
}
