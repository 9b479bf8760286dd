import { lstat, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { errorCode } from '../lib/system-error.js';
import { ReplicationError, type Destination } from '../store/file/replication/destinations/destination.js';
import { openDestination } from '../store/file/replication/destinations/open-destination.js';
import { DirectoryDestination } from '../store/file/replication/destinations/directory-destination.js';
import { readReplicaKeys } from '../store/file/replication/destinations/replica-keys.js';
import { restorePoints } from '../store/file/replication/restore-points.js';
import { restoreReplica, writeRestored, type RestorePoint } from '../store/file/replication/restore.js';
import { writeLocalRecord } from '../store/file/replication/store-id.js';
import { SealedDestination } from '../store/file/replication/destinations/sealed-destination.js';
import { verifyReplicas } from '../store/file/replication/verification.js';
import { checkDestination, counted, writeDataDirectory } from './data-copy.js';
import { UsageError } from './errors.js';

/**
 * The replicas in `from`: s3://bucket/prefix, or an existing directory (a mistyped --from is not made),
 * opened under the keys of `keyFile` (sealed-destination.ts).
 */
async function replicaSource(
  from: string | undefined,
  usage: string,
  keyFile: string | undefined,
): Promise<Destination> {
  if (from === undefined) throw new UsageError(usage);
  const keys = keyFile === undefined ? [] : await readReplicaKeys(keyFile);
  return new SealedDestination(await plainSource(from), keys);
}

async function plainSource(from: string): Promise<Destination> {
  if (from.startsWith('s3://'))
    return openDestination(from, undefined, { warn: (message) => void process.stderr.write(`warning: ${message}\n`) });
  const stats = await lstat(from).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT')
      throw new ReplicationError('not_found', `there is no directory ${from}; is --from right?`);
    throw error;
  });
  if (!stats.isDirectory()) throw new ReplicationError('not_found', `${from} is not a directory`);
  return new DirectoryDestination(resolve(from));
}

// An ISO 8601 time with its zone: without one it would be read in the local zone of whoever runs restore.
const UNTIL_TIME =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:[0-9]{2})$/;

/** `--until`: a pet id (digits) or an ISO 8601 time with its zone, each field in range (Date rolls 02-30 over). */
export function parseUntil(raw: string | undefined): RestorePoint {
  if (raw === undefined) return undefined;
  if (/^[0-9]{1,16}$/.test(raw) && Number.isSafeInteger(Number(raw))) return { id: Number(raw) };
  const [, year, month, day, hour, minute, second] = (UNTIL_TIME.exec(raw) ?? []).map(Number);
  const time = new Date(year === undefined ? NaN : Date.parse(raw));
  const inRange =
    month !== undefined &&
    day !== undefined &&
    hour !== undefined &&
    minute !== undefined &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= new Date(Date.UTC(year as number, month, 0)).getUTCDate() &&
    hour <= 23 &&
    minute <= 59 &&
    (second === undefined || Number.isNaN(second) || second <= 59);
  if (Number.isNaN(time.getTime()) || !inRange) {
    throw new UsageError(
      `--until must be a pet id or an ISO 8601 time with its zone such as 2026-11-27T01:30:00Z, got "${raw}"`,
    );
  }
  return { time };
}

/** What `restore` is told besides its target: where from, to which point, from which lineage, or to list the points. */
export interface RestoreRequest {
  from: string | undefined;
  keyFile: string | undefined;
  until: string | undefined;
  lineage: string | undefined;
  list: boolean;
}

const RESTORE_USAGE =
  'usage: restore <new-dir> --from <replica-dir | s3://bucket/prefix> [--until <id | ISO time>] ' +
  '[--lineage <id>]' +
  '\n       restore --list --from <replica-dir | s3://bucket/prefix>';

/**
 * `restore <new-dir> --from <replicas> [--until <id | time>] [--lineage <id>]`: a new data directory
 * made from the replicas, which a server started on it serves, as `backup` makes one: refused for a
 * target that exists and is not empty, written beside it and renamed into place last. The restored
 * store keeps the replicated store's id and records the position it came from: a start of it against
 * the same destination is refused until told to take it over (succession.ts). It continues after
 * every id the lost one may have handed out (restore.ts, idMargin). `--list` prints the restore points.
 */
export async function runRestoreCommand(
  args: readonly string[],
  request: RestoreRequest,
  out: (line: string) => void,
  fs: FileSystem = nodeFileSystem,
): Promise<void> {
  const { from, until, lineage, list, keyFile } = request;
  if (list) {
    if (args.length > 0 || until !== undefined || lineage !== undefined) throw new UsageError(RESTORE_USAGE);
    return listRestorePoints(await replicaSource(from, RESTORE_USAGE, keyFile), fs, out);
  }
  const [target, ...extra] = args;
  if (target === undefined || extra.length > 0) throw new UsageError(RESTORE_USAGE);
  if (lineage !== undefined && !/^[0-9TZ]{16}-[0-9a-f]{12}$/.test(lineage)) {
    throw new UsageError(`--lineage takes a lineage id, got "${lineage}"`);
  }
  const point = parseUntil(until);
  const source = await replicaSource(from, RESTORE_USAGE, keyFile);
  // A directory of replicas must not hold the target; a bucket cannot, so the check is made against a path beside the
  // target.
  await checkDestination(
    target,
    (from as string).startsWith('s3://') ? join(dirname(resolve(target)), '.petstore-none') : (from as string),
    'a restore',
  );
  const restored = await restoreReplica(fs, source, point, target, lineage);
  const { position } = restored.position;
  try {
    await writeDataDirectory(fs, restored.staging, target, async (dir) => {
      await writeRestored(fs, dir, restored);
      const restoredFrom = { lineage: position.lineage, seq: position.seq };
      await writeLocalRecord(dir, { store: restored.store, restoredFrom });
    });
  } finally {
    await rm(restored.staging, { recursive: true, force: true });
  }
  out(
    `restored ${counted(restored.count, 'pet')} (last id ${restored.highest}) as of ${position.time} ` +
      `(lineage ${position.lineage}, position ${position.seq}) from ${from} to ${target}; new pets get ids after ` +
      `${restored.lastId}`,
  );
  if (restored.setBack > 0) {
    out(
      `${restored.setBack} journal ${restored.setBack === 1 ? 'line' : 'lines'} of that position repeated or ` +
        'preceded pets of its pets.json (shipped by an earlier build); each repeat was the same bytes and dropped, ' +
        'the rest set back in id order: no pet was lost',
    );
  }
}

async function listRestorePoints(source: Destination, fs: FileSystem, out: (line: string) => void): Promise<void> {
  out('lineage                          generation  position  time                      highest id  pets');
  let count = 0;
  for await (const point of restorePoints(fs, source)) {
    count++;
    const { lineage, generation, seq, time, highest, pets, newest } = point;
    out(
      `${lineage}  ${String(generation).padStart(10)}  ${String(seq).padStart(8)}  ${time.padEnd(24)}  ` +
        `${String(highest).padStart(10)}  ${pets}${newest ? '' : '  (not the newest history)'}`,
    );
  }
  if (count === 0) out(`${source.name} holds no restore point yet`);
}

/** `verify --from <replicas>`: every position, its chain, its objects' checksums and what restore checks; 0 intact. */
export async function runReplicaVerify(
  args: readonly string[],
  from: string | undefined,
  keyFile: string | undefined,
  out: (line: string) => void,
  fs: FileSystem = nodeFileSystem,
): Promise<number> {
  const usage = 'usage: verify --from <replica-dir | s3://bucket/prefix>';
  if (args.length > 0) throw new UsageError(usage);
  const problems = await verifyReplicas(fs, await replicaSource(from, usage, keyFile), out);
  if (problems.length === 0) {
    out('every position and object intact');
    return 0;
  }
  out(`${problems.length} ${problems.length === 1 ? 'problem' : 'problems'}:`);
  for (const problem of problems) out(`  ${problem}`);
  return 1;
}
