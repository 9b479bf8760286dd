import type { FileSystem } from '../../../lib/file-system.js';
import { ReplicationError, type Destination } from './destinations/destination.js';
import { durableFiles, readRange, readWhole, type DurableJournal } from './durable-files.js';
import { headDocument, supersedingHead } from './head.js';
import {
  HEAD_KEY,
  POSITION_FORMAT,
  positionKey,
  segmentKey,
  sha256,
  type Position,
  type PositionRef,
  type ReplicatedFile,
  type Segment,
} from './layout.js';

/** What a lineage has shipped so far: the files of its newest position. */
export interface ShippedState {
  store: string;
  lineage: string;
  /** One above the parent's (succession.ts). */
  generation: number;
  parent: PositionRef | null;
  seq: number;
  /** SHA-256 of the newest position's text. */
  previous: string | null;
  files: Map<string, { file: ReplicatedFile; stamp: string }>;
  /**
   * Replaced files read and hashed for a round that then failed, by name: while one is unchanged the
   * next try uploads these bytes again instead of reading and hashing the file anew (an outage would
   * otherwise re-hash the whole snapshot every round; bench/results.md, issue40b). Emptied when a position is written.
   */
  unshipped?:
    | Map<string, { stamp: string; file: ReplicatedFile; uploads: Array<{ key: string; bytes: Buffer }> }>
    | undefined;
}

export interface RoundOutcome {
  /** Whether a new position was written (false: nothing had changed). */
  shipped: boolean;
  bytes: number;
  durable: DurableJournal;
}

/** What a round asks of the store: its durable journal, and a hold on its files while it reads them. */
export interface RoundSource {
  /** The file system the store's files are read through. */
  fs: FileSystem;
  journal: () => DurableJournal;
  /** Compaction replaces and removes no file until the release is called (FileStore.holdFiles). */
  holdFiles: () => Promise<() => void>;
}

/**
 * One round: reads what the data directory holds durably beyond what `state` shipped, uploads it as
 * new objects, then writes the position that lists every file — last, so that a position names only
 * objects that are there. `state` moves on only when the position is written; a failed round is
 * simply done again (its objects have the same names and contents). Uploads go one at a time: a
 * destination is never asked more than one thing at once. The head is read first: a round of a
 * lineage that a newer history has superseded fails ('superseded') without writing anything; after
 * the position, the head is written to name it. The store's files are held while they are read,
 * never during a request to the destination: the set read is consistent, and a hung destination
 * holds up no compaction.
 */
export async function shipRound(
  dir: string,
  destination: Destination,
  state: ShippedState,
  source: RoundSource,
  committedAtLeast: number,
): Promise<RoundOutcome> {
  const own = { store: state.store, lineage: state.lineage, seq: state.seq, generation: state.generation };
  await refuseIfSuperseded(destination, own);
  const time = new Date().toISOString();
  const seq = state.seq + 1;
  const { durable, next, uploads } = await readChanges(dir, state, source, seq);
  const gone = [...state.files.keys()].some((name) => !next.has(name));
  if (uploads.length === 0 && !gone && state.seq > 0) return { shipped: false, bytes: 0, durable };
  let bytes = 0;
  for (const upload of uploads) {
    await destination.put(upload.key, upload.bytes);
    bytes += upload.bytes.length;
  }
  const position: Position = {
    format: POSITION_FORMAT,
    store: state.store,
    lineage: state.lineage,
    generation: state.generation,
    parent: state.parent,
    seq,
    time,
    previous: state.previous,
    idsHandedOut: durable.idsHandedOut,
    committedAtLeast,
    files: [...next.values()].map((entry) => entry.file),
  };
  const text = JSON.stringify(position);
  await destination.put(positionKey(state.lineage, seq), Buffer.from(text));
  state.seq = seq;
  state.previous = sha256(text);
  state.files = next;
  state.unshipped = undefined;
  await destination.put(HEAD_KEY, headDocument({ ...own, seq }));
  return { shipped: true, bytes: bytes + text.length, durable };
}

/** A lineage that a newer history has superseded at the destination writes nothing more there. */
async function refuseIfSuperseded(destination: Destination, own: Parameters<typeof supersedingHead>[1]): Promise<void> {
  const head = await supersedingHead(destination, own);
  if (head === undefined) return;
  throw new ReplicationError(
    'superseded',
    `${destination.name}: a newer history has begun there ` +
      `(lineage ${head.lineage}, generation ${head.generation}, of store ${head.store}); ` +
      'this server no longer replicates',
  );
}

type Upload = { key: string; bytes: Buffer };
type ShippedFile = { file: ReplicatedFile; stamp: string };

/** What one round's reading works with: where it reads, what was shipped, and the objects it will upload. */
interface RoundRead {
  dir: string;
  state: ShippedState;
  source: RoundSource;
  uploads: Upload[];
  /** Makes an object to upload of a file's bytes from `offset`, and returns the segment that names it. */
  segment(name: string, offset: number, bytes: Buffer): Segment;
}

/**
 * Reads, with the store's files held, what the directory holds durably: the files of position `seq`,
 * and the objects to upload for what changed since `state`.
 */
async function readChanges(
  dir: string,
  state: ShippedState,
  source: RoundSource,
  seq: number,
): Promise<{ durable: DurableJournal; next: Map<string, ShippedFile>; uploads: Upload[] }> {
  const uploads: Upload[] = [];
  const segment = (name: string, offset: number, bytes: Buffer): Segment => {
    const digest = sha256(bytes);
    const key = segmentKey(state.lineage, seq, name, offset, digest);
    uploads.push({ key, bytes });
    return { key, offset, length: bytes.length, sha256: digest };
  };
  const round: RoundRead = { dir, state, source, uploads, segment };
  const next = new Map<string, ShippedFile>();
  const release = await source.holdFiles();
  try {
    const { durable, files } = await durableFiles(source.fs, dir, source.journal);
    for (const f of files) {
      const previous = state.files.get(f.name);
      if (f.kind === 'appended') next.set(f.name, await appendedFile(round, f, previous));
      else if (previous !== undefined && previous.stamp === f.stamp) next.set(f.name, previous);
      else next.set(f.name, await replacedFile(round, f, previous));
    }
    return { durable, next, uploads };
  } finally {
    release();
  }
}

/** A journal: what was shipped of it, and a segment for what it has grown by since. */
async function appendedFile(
  round: RoundRead,
  f: { name: string; length: number },
  previous: ShippedFile | undefined,
): Promise<ShippedFile> {
  // A journal only grows; one found shorter than shipped is another file of that name: shipped anew.
  const kept =
    previous !== undefined && previous.file.length <= f.length
      ? previous.file
      : { name: f.name, length: 0, segments: [] };
  if (f.length <= kept.length) return { file: { name: f.name, length: f.length, segments: kept.segments }, stamp: '' };
  const grown = await readRange(round.source.fs, round.dir, f.name, kept.length, f.length);
  const segments = [...kept.segments, round.segment(f.name, kept.length, grown)];
  return { file: { name: f.name, length: f.length, segments }, stamp: '' };
}

/**
 * A file replaced since it was shipped (a snapshot): the bytes a failed round read of it, while it is
 * unchanged, or read whole and kept in `state.unshipped` until a position is written.
 */
async function replacedFile(
  round: RoundRead,
  f: { name: string; stamp: string },
  previous: ShippedFile | undefined,
): Promise<ShippedFile> {
  const { state, uploads } = round;
  const held = state.unshipped?.get(f.name);
  if (held !== undefined && held.stamp === f.stamp) {
    uploads.push(...held.uploads);
    return { file: held.file, stamp: held.stamp };
  }
  const before = uploads.length;
  const { bytes, stamp } = await readWhole(round.source.fs, round.dir, f.name);
  const same =
    previous !== undefined &&
    previous.file.length === bytes.length &&
    (previous.file.segments[0]?.sha256 ?? sha256('')) === sha256(bytes);
  const file = same
    ? previous.file
    : { name: f.name, length: bytes.length, segments: bytes.length === 0 ? [] : [round.segment(f.name, 0, bytes)] };
  (state.unshipped ??= new Map()).set(f.name, { stamp, file, uploads: uploads.slice(before) });
  return { file, stamp };
}
