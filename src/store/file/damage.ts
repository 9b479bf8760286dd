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
  /**
   * What kind of damage this is, where that matters past its reason: lines missing from a journal
   * (no bytes), an intact line out of order, or a snapshot whose checksum does not match its intact lines.
   */
  kind?: 'missing' | 'out-of-order' | 'whole-file' | undefined;
  /** Its pet was kept after all: an intact line set back in id order, or ids missing found elsewhere. */
  kept?: boolean | undefined;
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
      `damaged data: ${shown}${more}. A damaged record is never served: the "verify" command lists every damaged ` +
        `place, ` +
        'and "repair <new-dir>" writes a new data directory with every intact pet (docs/operations.md, "Damaged data")',
    );
    this.name = 'StoreDamagedError';
    this.damage = damage;
  }
}

/**
 * The id a damaged line names, when it can be believed: between the intact pets around it. A flip in
 * the id's own digits names another pet, or none.
 */
export function namedId(d: Damage): number | undefined {
  if (d.id === undefined || d.between === undefined) return d.id;
  return d.id > d.between[0] && d.id < d.between[1] ? d.id : undefined;
}

/**
 * `pets.json line 57 (byte 3620, pet 56): checksum mismatch`, and which pets the bytes may have held
 * when that is more than the one named (a zeroed block takes several lines with it).
 */
export function describeDamage(d: Damage): string {
  const id = namedId(d);
  const [after, before] = d.between ?? [0, 0];
  const span =
    d.between === undefined || before - after <= 2 || (id !== undefined && before === Number.POSITIVE_INFINITY)
      ? ''
      : before === Number.POSITIVE_INFINITY
        ? ` (may have held pets ${after + 1} and later)`
        : ` (may have held pets ${after + 1}–${before - 1})`;
  return `${d.file} line ${d.line} (byte ${d.offset}${id === undefined ? '' : `, pet ${id}`}): ${d.reason}${span}`;
}

/** The damaged places a repair sets aside: all but the intact lines it kept. */
export const setAside = (damage: readonly Damage[]): Damage[] => damage.filter((d) => d.kept !== true);

/**
 * The damaged places as JSON lines, for a person to read and a program to use: where each was, why it
 * was set aside, the pets it may have held, and its bytes, as UTF-8 text (a byte that is not UTF-8
 * shown as U+FFFD) and exactly, in base64.
 */
export function damageReport(damage: readonly Damage[]): string {
  return setAside(damage)
    .map(
      (d) =>
        `${JSON.stringify({
          file: d.file,
          line: d.line,
          offset: d.offset,
          reason: d.reason,
          ...(namedId(d) === undefined ? {} : { id: d.id }),
          ...(d.between === undefined
            ? {}
            : {
                mayHaveHeld: {
                  above: d.between[0],
                  ...(d.between[1] === Number.POSITIVE_INFINITY ? {} : { below: d.between[1] }),
                },
              }),
          text: d.bytes.toString('utf8'),
          base64: d.bytes.toString('base64'),
        })}\n`,
    )
    .join('');
}
