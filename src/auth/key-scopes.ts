import { SCOPES, type Scope } from '../pet/contract.js';

/** A set of scopes as bits, one per entry of SCOPES in its order: checking a request's scope is one AND. */
export type ScopeBits = number;

/** Every scope there is: what a key stored or given without scopes holds. */
export const ALL_SCOPES: ScopeBits = (1 << SCOPES.length) - 1;

const BITS = new Map<string, ScopeBits>(SCOPES.map((scope, i) => [scope, 1 << i]));

export function scopeBit(scope: Scope): ScopeBits {
  return BITS.get(scope) as ScopeBits;
}

/** Whether `name` is one of the scopes there are. */
export function isScope(name: string): name is Scope {
  return BITS.has(name);
}

/** What to say about a name that is not a scope: the scopes there are. */
export function unknownScope(name: string): string {
  return `unknown scope ${JSON.stringify(name)}; the scopes are ${SCOPES.join(', ')}`;
}

/**
 * The bits of the scopes named; undefined or null (a key stored without scopes, a database NULL) is
 * every scope. Throws a TypeError naming the scopes there are for an unknown name or an empty list:
 * a key that may do nothing is never what was meant.
 */
export function scopeBits(names: readonly string[] | null | undefined): ScopeBits {
  if (names === undefined || names === null) return ALL_SCOPES;
  if (names.length === 0)
    throw new TypeError(
      `an empty list of scopes; name at least one (the scopes are ${SCOPES.join(', ')}), or none at all for every ` +
        `scope`,
    );
  let bits = 0;
  for (const name of names) {
    const bit = BITS.get(name);
    if (bit === undefined) throw new TypeError(unknownScope(name));
    bits |= bit;
  }
  return bits;
}

/** The scope names of `bits`, in the order of SCOPES. */
export function scopeNames(bits: ScopeBits): Scope[] {
  return SCOPES.filter((scope) => (bits & scopeBit(scope)) !== 0);
}
