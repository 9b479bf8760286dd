import type { Socket } from 'node:net';
import type { AcceptedKey, Keyring } from '../../auth/keyring.js';

/** The Authorization header a connection's latest accepted request sent, and the key it was accepted as. */
interface Remembered {
  header: string;
  generation: number;
  key: AcceptedKey;
}

/*
 * A client sends the same Authorization header on every request of a keep-alive connection; parsing
 * it and hashing its key each time was a tenth of a list's CPU (issue 34). So the header last accepted
 * on a connection is remembered with its key, and a request sending the same text is accepted as that
 * key without hashing, as long as the keyring has not changed since: a key file or database read that
 * changes the keys (a revocation) makes a new generation, which ends every remembered key. The text is
 * compared without an early exit: behind a proxy one upstream connection carries requests of several
 * clients, and how long a comparison takes must say nothing about another client's key.
 */

/**
 * One service's keyring and the key each connection was last accepted as. Services embedded side by
 * side (chained with `next`) see the same connections; each has its own, so none takes another's key.
 */
export class RememberedKeys {
  // Weakly held: a closed connection takes its entry with it, and no property is added to Node's sockets.
  readonly #bySocket = new WeakMap<Socket, Remembered>();

  constructor(readonly keyring: Keyring) {}

  /** The key remembered for `socket` if `header` is the one it was accepted with, under the keyring's current keys. */
  find(socket: Socket, header: string, now: number): AcceptedKey | undefined {
    const last = this.#bySocket.get(socket);
    if (last === undefined) return undefined;
    this.keyring.refresh(now);
    return last.generation === this.keyring.generation && sameText(last.header, header) ? last.key : undefined;
  }

  /** Remembers that `header` was accepted as `key` on `socket`, under the keyring's current keys. */
  remember(socket: Socket, header: string, key: AcceptedKey): void {
    this.#bySocket.set(socket, { header, generation: this.keyring.generation, key });
  }
}

/** Whether `a` and `b` are the same text, in a time that depends on their length only. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
