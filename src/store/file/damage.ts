import { StoreOpenError } from '../store.js';

/** One damaged place in a data file: bytes that are not what the server wrote there. */
export interface Damage {
  /** The file's path. */
  file: string;
  /** The 1-based line the damage begins on, and the byte offset in the file where that line begins. */
  line: number;
  offset: number;
  /** The damaged bytes, from `offset` (a copy, kept for whoever repairs). */
  bytes: Buffer;
  /** What is wrong, in words. */
  reason: string;
  /** The pet id its line still names, when it can be read. */
  id: number | undefined;
  /**
   * Ids of pets these bytes may have held: above the intact pet before them, below the intact pet
   * after them (Infinity when none follows); undefined where no pet can have been (a file's head).
   */
  between: [number, number] | undefined;
}

/** How many damaged places a refusal to start names before it says how many more there are. */
const SHOWN = 3;

/**
 * The data directory holds damaged records, which are never served: the server refuses to start,
 * naming the first places; the `verify` command lists them all, `repair` saves every intact pet.
 */
export class StoreDamagedError extends StoreOpenError {
  readonly damage: readonly Damage[];

  constructor(damage: readonly Damage[]) {
    const shown = damage.slice(0, SHOWN).map(describeDamage).join('; ');
    const more = damage.length > SHOWN ? `; and ${damage.length - SHOWN} more` : '';
    super(
      `damaged data: ${shown}${more}. A damaged record is never served: the "verify" command lists every damaged place, ` +
      'and "repair <new-dir>" writes a new data directory with every intact pet (docs/operations.md, "Damaged data")',
    );
    this.name = 'StoreDamagedError';
    this.damage = damage;
  }
}

/** `pets.json line 57 (byte 3620, pet 56): checksum mismatch`, with the ids its bytes may have held. */
export function describeDamage(d: Damage): string {
  const id = d.id === undefined ? '' : `, pet ${d.id}`;
  const [after, before] = d.between ?? [0, 0];
  const span = d.between === undefined || before - after < 2 || (d.id !== undefined && before - after === 2) ? ''
    : before === Number.POSITIVE_INFINITY ? ` (may have held pets ${after + 1} and later)` : ` (may have held pets ${after + 1}–${before - 1})`;
  return `${d.file} line ${d.line} (byte ${d.offset}${id}): ${d.reason}${span}`;
}
