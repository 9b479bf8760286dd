import { randomFillSync } from 'node:crypto';

/**
 * A 32-bit hash of text keyed with a secret, for hash tables indexed by what clients choose:
 * without the secret no one can tell which texts share a hash, so none can be chosen to pile up on
 * one slot (the hash flooding of CVE-2011-4885 and its kin). HalfSipHash-1-3 (Aumasson and
 * Bernstein's SipHash on 32-bit words; Linux's hsiphash on 32-bit machines) over the text's UTF-16LE
 * bytes, two code units a word: a hash-table PRF, not a MAC.
 */
export class KeyedHash {
  readonly #k0: number;
  readonly #k1: number;

  /** Keyed with `key` (two 32-bit words), or with a random secret of this process's own. */
  constructor(key: Uint32Array = randomFillSync(new Uint32Array(2))) {
    this.#k0 = (key[0] as number) | 0;
    this.#k1 = (key[1] as number) | 0;
  }

  /** The hash of `text`, as a signed 32-bit integer. */
  hash(text: string): number {
    let v0 = this.#k0;
    let v1 = this.#k1;
    let v2 = 0x6c796765 ^ this.#k0;
    let v3 = 0x74656462 ^ this.#k1;
    const bytes = text.length * 2;
    const whole = text.length & ~1;
    // One SipRound per 4-byte word: v3 takes the word in, v0 after the round. The last word holds
    // the length's low byte on top and an odd code unit left over, if any, below it.
    for (let i = 0; ; i += 2) {
      const last = i >= whole;
      const word = last
        ? (bytes << 24) | (i < text.length ? text.charCodeAt(i) : 0)
        : text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16);
      v3 ^= word;
      v0 = (v0 + v1) | 0;
      v1 = rotl(v1, 5) ^ v0;
      v0 = rotl(v0, 16);
      v2 = (v2 + v3) | 0;
      v3 = rotl(v3, 8) ^ v2;
      v0 = (v0 + v3) | 0;
      v3 = rotl(v3, 7) ^ v0;
      v2 = (v2 + v1) | 0;
      v1 = rotl(v1, 13) ^ v2;
      v2 = rotl(v2, 16);
      v0 ^= word;
      if (last) break;
    }
    // Finalisation: three rounds.
    v2 ^= 0xff;
    for (let round = 0; round < 3; round++) {
      v0 = (v0 + v1) | 0;
      v1 = rotl(v1, 5) ^ v0;
      v0 = rotl(v0, 16);
      v2 = (v2 + v3) | 0;
      v3 = rotl(v3, 8) ^ v2;
      v0 = (v0 + v3) | 0;
      v3 = rotl(v3, 7) ^ v0;
      v2 = (v2 + v1) | 0;
      v1 = rotl(v1, 13) ^ v2;
      v2 = rotl(v2, 16);
    }
    return v1 ^ v3;
  }
}

const rotl = (x: number, bits: number): number => (x << bits) | (x >>> (32 - bits));
