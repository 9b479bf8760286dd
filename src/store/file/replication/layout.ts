import { createHash, randomBytes } from 'node:crypto';

/**
 * The layout of a destination (design.md, "Replication"):
 *
 *   store.json                                      which store replicates here: {"store": "<id>"}
 *   head.json                                       the newest position written (head.ts), written after it
 *   lineages/<lineage>/data/<seq>-<offset>-<sha256>-<file>   bytes of <file> from <offset>, immutable
 *   lineages/<lineage>/positions/<seq>.json         what is complete after round <seq>, written last
 *
 * A lineage is one run of one store: a new one at every start, so a store restored or repaired never
 * adds to the objects of the history it left. A lineage names the position it continues from (its
 * parent) and a generation one above the parent's: the newest history is the lineage of the highest
 * generation (history.ts), never the one whose name or clock says so. A position lists every file of
 * the data directory with the objects that make it up, in order, each with its checksum, and the
 * checksum of the position before it (the chain); restore takes one position and needs nothing else.
 */
export const STORE_KEY = 'store.json';
export const HEAD_KEY = 'head.json';
export const LINEAGES = 'lineages/';
export const POSITION_FORMAT = 2;
// Positions of format 1 carry no generation: read as generation 0, before every newer one.
const LEGACY_FORMAT = 1;

/** A position of a lineage: where another lineage continues from. */
export interface PositionRef {
  lineage: string;
  seq: number;
}

export interface Segment {
  key: string;
  offset: number;
  length: number;
  sha256: string;
}

export interface ReplicatedFile {
  name: string;
  length: number;
  /** In order, each starting where the one before ended: together bytes [0, length). */
  segments: Segment[];
}

export interface Position {
  format: number;
  store: string;
  lineage: string;
  seq: number;
  /** One above the parent's: which of two lineages is the newer one (0: a position of format 1). */
  generation: number;
  /** The position this lineage continues from; null for a store's first lineage (or one of format 1). */
  parent: PositionRef | null;
  /** When the files it lists were read (ISO 8601). */
  time: string;
  /** SHA-256 of the position before it in this lineage, null for the first. */
  previous: string | null;
  /** The highest id the store had handed out when the files were read: a restore continues beyond it. */
  idsHandedOut: number;
  /** An id every pet of the files is at least at (the last commit seen before they were read). */
  committedAtLeast: number;
  files: ReplicatedFile[];
}

export const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');
const seqText = (seq: number): string => String(seq).padStart(12, '0');

/** A new lineage id: the time it began (so that lineages sort by age) and 48 random bits. */
export function newLineage(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.[0-9]+Z$/, 'Z')}-${randomBytes(6).toString('hex')}`;
}

export const newStoreId = (): string => randomBytes(16).toString('hex');
export const positionsPrefix = (lineage: string): string => `${LINEAGES}${lineage}/positions/`;
export const positionKey = (lineage: string, seq: number): string => `${positionsPrefix(lineage)}${seqText(seq)}.json`;

export function segmentKey(lineage: string, seq: number, name: string, offset: number, digest: string): string {
  return `${LINEAGES}${lineage}/data/${seqText(seq)}-${offset}-${digest}-${name}`;
}

const LINEAGE = /^[0-9TZ]{16}-[0-9a-f]{12}$/;
const POSITION = /^lineages\/([^/]+)\/positions\/([0-9]{12})\.json$/;
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The lineage and round of a position's key, or undefined for any other key. */
export function parsePositionKey(key: string): { lineage: string; seq: number } | undefined {
  const match = POSITION.exec(key);
  return match === null || !LINEAGE.test(match[1] as string)
    ? undefined
    : { lineage: match[1] as string, seq: Number(match[2]) };
}

const isRef = (ref: unknown): boolean =>
  ref === null ||
  (typeof ref === 'object' &&
    LINEAGE.test(String((ref as PositionRef).lineage)) &&
    Number.isSafeInteger((ref as PositionRef).seq));

/** A file name that may travel: no path, nothing hidden (temp files start with a dot). */
export const isShippableName = (name: string): boolean => FILE_NAME.test(name);

/** A position read back, checked for form (not yet against its objects); throws a description of what is wrong. */
export function parsePosition(text: string, key: string): Position {
  const value = JSON.parse(text) as Position;
  const where = parsePositionKey(key);
  const fail = (what: string): never => {
    throw new Error(`${key}: ${what}`);
  };
  if (typeof value !== 'object' || value === null) fail(`not a position of format ${POSITION_FORMAT}`);
  if (value.format === LEGACY_FORMAT) Object.assign(value, { generation: 0, parent: null });
  else if (value.format !== POSITION_FORMAT) fail(`not a position of format ${POSITION_FORMAT}`);
  if (!Number.isSafeInteger(value.generation) || value.generation < 0 || !isRef(value.parent)) {
    fail('no generation or parent');
  }
  if (where === undefined || value.lineage !== where.lineage || value.seq !== where.seq)
    fail('its lineage or round is not the one its name says');
  if (typeof value.store !== 'string' || typeof value.time !== 'string' || Number.isNaN(Date.parse(value.time)))
    fail('no store or time');
  if (!Number.isSafeInteger(value.idsHandedOut) || !Number.isSafeInteger(value.committedAtLeast)) fail('no ids');
  if (!Array.isArray(value.files)) fail('no files');
  for (const file of value.files) {
    if (!isShippableName(file.name) || !Number.isSafeInteger(file.length) || !Array.isArray(file.segments))
      fail(`file ${String(file.name)} is malformed`);
    let offset = 0;
    for (const segment of file.segments) {
      if (
        segment.offset !== offset ||
        !Number.isSafeInteger(segment.length) ||
        segment.length <= 0 ||
        !/^[0-9a-f]{64}$/.test(segment.sha256) ||
        !segment.key.startsWith(`${LINEAGES}${value.lineage}/data/`)
      ) {
        fail(`file ${file.name}: its objects do not follow one another`);
      }
      offset += segment.length;
    }
    if (offset !== file.length) fail(`file ${file.name}: its objects make ${offset} bytes, not ${file.length}`);
  }
  return value;
}
