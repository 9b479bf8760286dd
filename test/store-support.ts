/**
 * A FileSystem for the store tests: it records every call as it completes, and lets a test fail a
 * call (disk full, I/O error), hold it, or crash the "machine" at it by copying the data directory as
 * it is at that instant.
 */
import assert from 'node:assert/strict';
import { cp, readdir, readFile, rm, stat, symlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { TestContext } from 'node:test';
import {
  nodeFileSystem,
  type FileStat,
  type FileSystem,
  type ReadFile,
  type StoreFile,
} from '#dist/lib/file-system.js';
import { petJson } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { tempDir } from './support.js';
import { referenceCrc32 } from './reference-crc32.js';

export type Op =
  | 'open'
  | 'readFile'
  | 'openRead'
  | 'read'
  | 'stat'
  | 'readdir'
  | 'mkdir'
  | 'rename'
  | 'unlink'
  | 'syncDir'
  | 'statfs'
  | 'write'
  | 'datasync'
  | 'truncate'
  | 'close';

export interface Call {
  op: Op;
  /** The file or directory; for `rename` the source. */
  path: string;
  /** `rename` target. */
  to?: string;
  flags?: 'wx' | 'r+';
  /** `write`: the bytes. */
  data?: Uint8Array;
}

/** What a hook decides for a call: fail it with `code`; `partial` first writes half of a write's bytes. */
export interface Fault {
  code: string;
  partial?: boolean;
}

/** Runs before each call: returns a Fault to fail it, a promise to hold it, nothing to let it run. */
export type Hook = (call: Call) => Fault | undefined | Promise<Fault | undefined>;

export function systemError(code: string, call: Call): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: simulated failure, ${call.op} '${call.path}'`), {
    code,
    syscall: call.op,
    path: call.path,
  });
}

/** A short, stable name for a path in the log: the temp snapshot's random part becomes `*`. */
export function shortName(path: string): string {
  return basename(path).replace(/^\.(pets\.json|pets-ids\.json)\.[0-9a-f]+\.tmp$/, '.$1.*.tmp');
}

export const isTempPath = (path: string): boolean => /^\.pets\.json\.[0-9a-f]+\.tmp$/.test(basename(path));
export const isJournalPath = (path: string): boolean => /^pets-journal\.[0-9]+\.jsonl$/.test(basename(path));

export class TestFileSystem implements FileSystem {
  /** Completed calls, as `op name` (`rename from -> to`); a failed one ends in ` !CODE`. */
  readonly log: string[] = [];
  /** Completed calls, in order. */
  readonly done: Call[] = [];
  hook: Hook | undefined;
  readonly #base: FileSystem;
  readonly #open = new Set<StoreFile>();

  constructor(base: FileSystem = nodeFileSystem) {
    this.#base = base;
  }

  /** Counts the completed calls of `op` (on paths matching `filter`). */
  count(op: Op, filter: (path: string) => boolean = () => true): number {
    return this.done.filter((c) => c.op === op && filter(c.path)).length;
  }

  async #run<T>(call: Call, action: () => Promise<T>, partial?: () => Promise<void>): Promise<T> {
    const fault = await this.hook?.(call);
    const entry =
      call.op === 'rename'
        ? `rename ${shortName(call.path)} -> ${shortName(call.to ?? '')}`
        : `${call.op} ${shortName(call.path)}`;
    if (fault !== undefined) {
      if (fault.partial === true && partial !== undefined) await partial();
      this.log.push(`${entry} !${fault.code}`);
      throw systemError(fault.code, call);
    }
    try {
      const result = await action();
      this.log.push(entry);
      this.done.push(call);
      return result;
    } catch (error) {
      this.log.push(`${entry} !${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      throw error;
    }
  }

  /** Closes every file the store left open, bypassing the hook: what the kernel does when a process dies. */
  async closeAbandoned(): Promise<void> {
    for (const file of this.#open) await file.close();
    this.#open.clear();
  }

  async open(path: string, flags: 'wx' | 'r+'): Promise<StoreFile> {
    const file = await this.#run({ op: 'open', path, flags }, () => this.#base.open(path, flags));
    this.#open.add(file);
    return {
      write: (data, position) =>
        this.#run(
          { op: 'write', path, data },
          () => file.write(data, position),
          () => file.write(data.subarray(0, Math.floor(data.length / 2)), position),
        ),
      datasync: () => this.#run({ op: 'datasync', path }, () => file.datasync()),
      truncate: (length) => this.#run({ op: 'truncate', path }, () => file.truncate(length)),
      close: () =>
        this.#run({ op: 'close', path }, async () => {
          await file.close();
          this.#open.delete(file);
        }),
    };
  }

  readFile(path: string): Promise<Buffer> {
    return this.#run({ op: 'readFile', path }, () => this.#base.readFile(path));
  }

  async openRead(path: string): Promise<ReadFile> {
    const file = await this.#run({ op: 'openRead', path }, () => this.#base.openRead(path));
    return {
      read: (buffer, offset, length, position) =>
        this.#run({ op: 'read', path }, () => file.read(buffer, offset, length, position)),
      stat: () => this.#run({ op: 'stat', path }, () => file.stat()),
      close: () => this.#run({ op: 'close', path }, () => file.close()),
    };
  }

  stat(path: string): Promise<FileStat> {
    return this.#run({ op: 'stat', path }, () => this.#base.stat(path));
  }

  readdir(path: string): Promise<string[]> {
    return this.#run({ op: 'readdir', path }, () => this.#base.readdir(path));
  }

  mkdir(path: string): Promise<string | undefined> {
    return this.#run({ op: 'mkdir', path }, () => this.#base.mkdir(path));
  }

  rename(from: string, to: string): Promise<void> {
    return this.#run({ op: 'rename', path: from, to }, () => this.#base.rename(from, to));
  }

  unlink(path: string): Promise<void> {
    return this.#run({ op: 'unlink', path }, () => this.#base.unlink(path));
  }

  syncDir(path: string): Promise<void> {
    return this.#run({ op: 'syncDir', path }, () => this.#base.syncDir(path));
  }

  availableBytes(path: string): Promise<number> {
    return this.#run({ op: 'statfs', path }, () => this.#base.availableBytes(path));
  }
}

const never = (): Promise<never> => new Promise<never>(() => {});

/** A pid that no process has (above the kernel's pid_max). */
export const DEAD_PID = 2147483646;

/**
 * Simulates a power cut at the first call that `at` matches: that call is held, then `crash(to)`
 * copies the data directory as it is at that instant to `to`, and from then on no call ever returns.
 * The copy's lock is given to a dead process, as a killed server would leave it.
 */
export class Crash {
  readonly fileSystem = new TestFileSystem();
  /** Resolves with the held call once it is reached. */
  readonly reached: Promise<Call>;
  #crashed = false;
  #held = false;

  constructor(
    readonly dir: string,
    at: (call: Call, done: readonly Call[]) => boolean,
  ) {
    let onReached!: (call: Call) => void;
    this.reached = new Promise((resolve) => (onReached = resolve));
    this.fileSystem.hook = (call) => {
      if (this.#crashed) return never();
      if (!this.#held && at(call, this.fileSystem.done)) {
        this.#held = true;
        onReached(call);
        return never();
      }
      return undefined;
    };
  }

  async crash(to: string): Promise<void> {
    this.#crashed = true;
    await cp(this.dir, to, { recursive: true, verbatimSymlinks: true });
    await deadLock(to);
    await this.fileSystem.closeAbandoned();
  }
}

/** Replaces the lock in `dir` with one naming a process that is not running (a bare pid: judged by liveness alone). */
export async function deadLock(dir: string): Promise<void> {
  const path = join(dir, 'petstore.lock');
  await rm(path, { force: true });
  await symlink(String(DEAD_PID), path);
}

/** Names in a directory, sorted, without the lock file. */
export async function dataFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name !== 'petstore.lock').sort();
}

/**
 * Asserts that `dir` holds what a stopped store leaves: pets.json and the empty journal it names,
 * nothing else besides the lock file and `besides`. Returns the generation of that journal.
 */
export async function assertStopped(dir: string, besides: readonly string[] = ['pets-ids.json']): Promise<number> {
  const head = /^\{"format":"petstore-pets\/4","journal":([1-9][0-9]*),"pets":\[\n/.exec(
    await readFile(join(dir, 'pets.json'), 'utf8'),
  );
  assert.ok(head !== null, 'pets.json of format 4 names its journal');
  const journal = `pets-journal.${head[1]}.jsonl`;
  assert.deepEqual(await dataFiles(dir), [...besides, journal, 'pets.json'].sort());
  assert.equal((await stat(join(dir, journal))).size, 0, `${journal} is empty`);
  return Number(head[1]);
}

/**
 * The format-3 layout (docs/design.md, "Checksums"), made here independently of the server's code
 * with zlib's own CRC-32: a pet's line, `[pet,record?,"crc"]`, the CRC covering every byte before
 * the checksum's opening quote.
 */
export function recordLine(pet: Pet, record?: { scope: string; key: string; at: number }): string {
  const covered = `[${petJson(pet)},${record === undefined ? '' : `${JSON.stringify({ scope: record.scope, key: record.key, at: record.at })},`}`;
  return `${covered}"${hex8(referenceCrc32(Buffer.from(covered)))}"]`;
}

const hex8 = (n: number): string => n.toString(16).padStart(8, '0');

/** A snapshot as the store writes it: format 4, covering the journals before `journal`; its CRC covers all before `"crc":"`. */
export function snapshotText(pets: readonly Pet[], journal: number, lastId = pets.at(-1)?.id ?? 0, format = 4): string {
  const covered = `{"format":"petstore-pets/${format}","journal":${journal},"pets":[\n${pets.map((p) => recordLine(p)).join(',\n')}${pets.length > 0 ? '\n' : ''}],"count":${pets.length},"lastId":${lastId},`;
  return `${covered}"crc":"${hex8(referenceCrc32(Buffer.from(covered)))}"}\n`;
}

/** pets-ids.json as a clean stop leaves it, after `last` ids were handed out (id-reservation.ts). */
export function idsText(last: number, stopped = true): string {
  const covered = `{"format":"petstore-ids/1","reserved":${last},"stopped":${stopped},`;
  return `${covered}"crc":"${hex8(referenceCrc32(Buffer.from(covered)))}"}\n`;
}

/** A journal line of format 4 saying ids `from`–`to` hold no pet, its CRC covering all before `"crc":"`. */
export function skipLine(from: number, to: number): string {
  const covered = `{"skipped":[${from},${to}],`;
  return `${covered}"crc":"${hex8(referenceCrc32(Buffer.from(covered)))}"}\n`;
}

/**
 * Journal lines as the store appends them: in format 4 each id follows the one before (`after` for
 * the first), and ids between are written down as skipped.
 */
export function journalText(pets: readonly Pet[], after = (pets[0]?.id ?? 1) - 1): string {
  let previous = after;
  return pets
    .map((p) => {
      const skip = p.id > previous + 1 ? skipLine(previous + 1, p.id - 1) : '';
      previous = p.id;
      return `${skip}${recordLine(p)}\n`;
    })
    .join('');
}

/** Pet as plain comparable data (`categoryId` as its decimal digits). */
export function plain(pet: Pet): Record<string, unknown> {
  return {
    id: pet.id,
    name: pet.name,
    categoryId: String(pet.categoryId),
    ...(pet.status === undefined ? {} : { status: pet.status }),
  };
}

export async function fileBytes(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const name of await dataFiles(dir)) {
    const path = join(dir, name);
    if ((await stat(path)).isFile()) files.set(name, await readFile(path));
  }
  return files;
}

const cleanups = new WeakMap<TestContext, Array<() => unknown>>();

/** Runs `fn` after the test, last registered first (node:test runs its `after` hooks first registered first). */
export function defer(t: TestContext, fn: () => unknown): void {
  let list = cleanups.get(t);
  if (list === undefined) {
    const registered: Array<() => unknown> = [];
    list = registered;
    cleanups.set(t, registered);
    t.after(async () => {
      const errors: unknown[] = [];
      for (const cleanup of registered.reverse()) {
        try {
          await cleanup();
        } catch (error) {
          errors.push(error);
        }
      }
      if (errors.length > 0) throw new AggregateError(errors, 'cleanup failed');
    });
  }
  list.push(fn);
}

/** A temporary data directory, removed after the test. */
export async function dataDir(t: TestContext): Promise<string> {
  const dir = await tempDir('petstore-store-');
  defer(t, () => rm(dir, { recursive: true, force: true }));
  return dir;
}
