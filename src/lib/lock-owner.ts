import { readFileSync, statSync } from 'node:fs';
import { errorCode } from './system-error.js';

/**
 * Who holds a lock, precisely enough that a lock left by a previous boot, by a process whose pid has
 * since been reused, or copied with its directory (`cp -a`) is recognised as stale. A field is
 * undefined where it cannot be known (no /proc): the judgement then falls back to the pid being alive.
 */
export interface LockOwner {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot. */
  start: string | undefined;
  /** The first 8 hex digits of /proc/sys/kernel/random/boot_id, new at every boot. */
  boot: string | undefined;
  /** Device and inode of the directory the lock is in (hex): a copy is another inode; a rename is not. */
  dir: string | undefined;
  /**
   * The PID namespace (the inode of /proc/self/ns/pid, hex). Containers sharing a volume each have
   * their own, where the other's pid cannot be seen (and both may be pid 1): an owner in another
   * namespace is judged by the lock's heartbeat instead (see LockFile).
   */
  ns: string | undefined;
}

let thisProcess: { start: string | undefined; boot: string | undefined; ns: string | undefined } | undefined;

/** This process as the owner of a lock in `dir`. */
export function currentOwner(dir: string): LockOwner {
  thisProcess ??= { start: processStat('self')?.start, boot: bootId(), ns: pidNamespace() };
  const { dev, ino } = statSync(dir, { bigint: true });
  return { pid: process.pid, ...thisProcess, dir: `${dev.toString(16)}:${ino.toString(16)}` };
}

/** `<pid> <start> <boot> <dev:ino> <ns>`, `-` for what is unknown: at most about 60 bytes (see LockFile). */
export function formatOwner(owner: LockOwner): string {
  return [owner.pid, owner.start ?? '-', owner.boot ?? '-', owner.dir ?? '-', owner.ns ?? '-'].join(' ');
}

/**
 * The owner a lock names, or undefined when it names none. A bare pid (an earlier version's lock) is an owner of
 * unknown start, boot and directory.
 */
export function parseOwner(text: string): LockOwner | undefined {
  const [pid = '', start, boot, dir, ns, ...rest] = text.trim().split(' ');
  // Linux pids fit in 31 bits; anything else is not a pid (and process.kill would throw on it).
  if (!/^[1-9][0-9]{0,9}$/.test(pid) || Number(pid) > 2 ** 31 - 1 || rest.length > 0) return undefined;
  const known = (field: string | undefined): string | undefined =>
    field === undefined || field === '-' ? undefined : field;
  return { pid: Number(pid), start: known(start), boot: known(boot), dir: known(dir), ns: known(ns) };
}

/**
 * Whether `owner` still holds its lock, judged by `self` (this process, for the same directory).
 * Stale: made in another boot or for another directory, or its process is gone, is a zombie, or is
 * another process that got the same pid later.
 */
export function isLiveOwner(owner: LockOwner, self: LockOwner): boolean {
  if (differs(owner.dir, self.dir) || differs(owner.boot, self.boot)) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if (errorCode(error) === 'ESRCH') return false;
    if (errorCode(error) !== 'EPERM') throw error; // EPERM: it exists, but belongs to another user
  }
  const stat = processStat(String(owner.pid));
  if (stat === undefined) return true; // no /proc (or hidden): the pid being alive is all we know
  return !stat.zombie && !differs(owner.start, stat.start);
}

/** Whether the owner is in another PID namespace, where its pid says nothing to this process. */
export function inOtherNamespace(owner: LockOwner, self: LockOwner): boolean {
  return differs(owner.ns, self.ns);
}

function differs(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a !== b;
}

function pidNamespace(): string | undefined {
  try {
    return statSync('/proc/self/ns/pid').ino.toString(16);
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EACCES') return undefined;
    throw error;
  }
}

function processStat(pid: string): { start: string | undefined; zombie: boolean } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EACCES') return undefined;
    throw error;
  }
  // The command name (field 2) is in parentheses and may hold spaces and ')': count from the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { start: fields[19], zombie: fields[0] === 'Z' || fields[0] === 'X' };
}

function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replaceAll('-', '').slice(0, 8) || undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EACCES') return undefined;
    throw error;
  }
}
