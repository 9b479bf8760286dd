import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ReplicationError, type Destination } from './destination.js';
import { STORE_KEY } from '../layout.js';
import type { ReplicaKey } from './replica-keys.js';

/**
 * Every object sealed with AES-256-GCM (sealed-destination.ts): MAGIC, the key's 8-byte id, a random
 * 12-byte nonce, the ciphertext and its 16-byte tag. The additional data is the header and the
 * object's key, which names its lineage and round: an object moved to another name (swapped,
 * replayed into another round, reordered) does not open. store.json stays in clear: it holds only the
 * store's id, read to tell whose replicas a destination holds.
 */
const MAGIC = Buffer.from('PSEAL1');
const ID_BYTES = 8;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER = MAGIC.length + ID_BYTES;
// A large pets.json would hold the event loop for the whole seal: it is sealed a slice at a time,
// letting requests in between (bench/results.md, "Sealed replicas").
const SLICE_BYTES = 1 << 20;

/** `cipher.update` over `bytes` a slice at a time, with a turn of the event loop between slices. */
async function transform(cipher: { update(data: Uint8Array): Buffer }, bytes: Uint8Array): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    parts.push(cipher.update(bytes.subarray(at, at + SLICE_BYTES)));
  }
  return parts;
}

const additionalData = (header: Buffer, key: string): Buffer => Buffer.concat([header, Buffer.from(`\0${key}`)]);
export const isSealed = (bytes: Buffer): boolean => bytes.subarray(0, MAGIC.length).equals(MAGIC);

/** An object the key file given cannot open (none given, or not the key it was sealed with): `${key} is ${what}`. */
export class KeyRefused extends ReplicationError {
  constructor(
    key: string,
    /** What is wrong with the key file, said of any number of objects ("sealed: give the key file…"). */
    readonly what: string,
  ) {
    super('damaged', `${key} is ${what}`);
  }
}

/**
 * A destination whose objects are sealed under `keys` (the first seals, every one opens: rotation),
 * or, with none, one that refuses sealed objects with what to give. Objects that do not open are
 * refused as damaged, naming them; listing and deleting pass through.
 */
export class SealedDestination implements Destination {
  readonly name: string;
  readonly #inner: Destination;
  readonly #keys: readonly ReplicaKey[];

  constructor(inner: Destination, keys: readonly ReplicaKey[]) {
    this.name = inner.name;
    this.#inner = inner;
    this.#keys = keys;
    if (inner.tidy !== undefined) this.tidy = () => (inner.tidy as () => Promise<number>).call(inner);
  }

  tidy?(): Promise<number>;

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const sealing = this.#keys[0];
    if (sealing === undefined || key === STORE_KEY) return this.#inner.put(key, bytes);
    const header = Buffer.concat([MAGIC, sealing.id]);
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', sealing.key, nonce);
    cipher.setAAD(additionalData(header, key));
    const sealed = Buffer.concat([
      header,
      nonce,
      ...(await transform(cipher, bytes)),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    return this.#inner.put(key, sealed);
  }

  async get(key: string): Promise<Buffer | undefined> {
    const bytes = await this.#inner.get(key);
    if (bytes === undefined || key === STORE_KEY) return bytes;
    if (this.#keys.length === 0) {
      if (isSealed(bytes)) {
        throw new KeyRefused(key, 'sealed: give the key file it was sealed with (--replicate-key-file)');
      }
      return bytes;
    }
    if (!isSealed(bytes) || bytes.length < HEADER + NONCE_BYTES + TAG_BYTES) {
      throw new ReplicationError('damaged', `${key} is not sealed: written without a key, or forged`);
    }
    const id = bytes.subarray(MAGIC.length, HEADER);
    const opening = this.#keys.find((candidate) => candidate.id.equals(id));
    if (opening === undefined) {
      const named = id.toString('hex');
      throw new KeyRefused(key, `sealed with key ${named}, which the key file does not hold`);
    }
    const decipher = createDecipheriv('aes-256-gcm', opening.key, bytes.subarray(HEADER, HEADER + NONCE_BYTES));
    decipher.setAAD(additionalData(bytes.subarray(0, HEADER), key));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    try {
      const ciphertext = bytes.subarray(HEADER + NONCE_BYTES, bytes.length - TAG_BYTES);
      const parts = await transform(decipher, ciphertext);
      return Buffer.concat([...parts, decipher.final()]);
    } catch (error) {
      // node:crypto says only "Unsupported state or unable to authenticate data".
      if (!(error instanceof Error)) throw error;
      const what = 'forged, altered or moved from another name';
      throw new ReplicationError('damaged', `${key} does not open under its key: ${what}`, { cause: error });
    }
  }

  list(prefix: string): Promise<string[]> {
    return this.#inner.list(prefix);
  }

  delete(key: string): Promise<void> {
    return this.#inner.delete(key);
  }
}
