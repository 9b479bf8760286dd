import { errorCode } from '../../../../lib/system-error.js';

/**
 * Where replicas go: a directory or an S3 bucket, seen as flat keys ('a/b/c') holding bytes. Every
 * object is written once and never changed (its name says what it holds), except `store.json`.
 */
export interface Destination {
  /** Human-readable, never with a credential in it. */
  readonly name: string;
  put(key: string, bytes: Uint8Array): Promise<void>;
  /**
   * The object's bytes, or undefined when there is none. An object bigger than `size` (when the
   * caller knows it) or than the destination's bound for answers is refused, not read whole.
   */
  get(key: string, size?: number): Promise<Buffer | undefined>;
  /** Every key under `prefix`, sorted. */
  list(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /** Removes what failed writes left behind and emptied folders, where the destination has such; how many went. */
  tidy?(): Promise<number>;
}

/** Why a call to the destination failed, as the failures metric counts it. */
export type FailureReason =
  | 'timeout'
  | 'busy'
  | 'refused'
  | 'full'
  | 'unreachable'
  | 'not_found'
  | 'damaged'
  | 'superseded'
  | 'other';

/** A failed call to the destination, with its reason; the message never holds a credential. */
export class ReplicationError extends Error {
  /** A code, as Node's errors carry, so that the command line shows the message alone. */
  readonly code = 'ERR_PETSTORE_REPLICATION';

  constructor(
    readonly reason: FailureReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ReplicationError';
  }
}

const REASONS: Record<string, FailureReason> = {
  EACCES: 'refused',
  EPERM: 'refused',
  EROFS: 'refused',
  ENOSPC: 'full',
  EDQUOT: 'full',
  EFBIG: 'full',
  ECONNREFUSED: 'unreachable',
  ENOTFOUND: 'unreachable',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  ECONNRESET: 'unreachable',
  ETIMEDOUT: 'timeout',
  ESTALE: 'unreachable',
  EIO: 'unreachable',
  ENOTCONN: 'unreachable',
  ENOENT: 'not_found',
  ENOTDIR: 'not_found',
};

/** The reason of any error a destination call threw. */
export function reasonOf(error: unknown): FailureReason {
  if (error instanceof ReplicationError) return error.reason;
  return REASONS[errorCode(error) ?? ''] ?? 'other';
}
