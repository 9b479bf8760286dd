import { lstatSync } from 'node:fs';
import { dirname } from 'node:path';
import { KeyFileError } from '../auth/key-file.js';
import { errorCode } from '../lib/system-error.js';
import { StoreOpenError } from '../store/store.js';
import { CopyRefused } from './data-copy.js';
import { CommandError, UsageError } from './errors.js';
import { shellWord } from './invocation.js';
import { describeUser, userName } from './users.js';

/**
 * What the command line prints when a command fails, and its exit status. Every failure is one line
 * that starts with what could not be done (`cannot start`, `keys create failed`…) and says what to
 * do about it; a malformed command line exits 2 and points to --help; a bug shows its stack.
 */
export function failure(error: unknown, what: string): { status: 1 | 2; text: string } {
  if (
    error instanceof UsageError ||
    (error instanceof TypeError && String(errorField(error, 'code')).startsWith('ERR_PARSE_ARGS'))
  ) {
    return { status: 2, text: `${what}: ${error.message}\nRun with --help to see every option.\n` };
  }
  if (!(error instanceof Error)) return { status: 1, text: `${what}: ${String(error)}\n` };
  const advice = systemAdvice(error) ?? (error.cause instanceof Error ? systemAdvice(error.cause) : undefined);
  if (advice !== undefined) return { status: 1, text: `${what}: ${advice}\n` };
  // Our own refusals, and errors that carry a code, say what is wrong in their message; anything else is a bug.
  const known =
    error instanceof CommandError ||
    error instanceof StoreOpenError ||
    error instanceof KeyFileError ||
    error instanceof CopyRefused ||
    typeof errorField(error, 'code') === 'string';
  return { status: 1, text: `${what}: ${known ? error.message : (error.stack ?? error.message)}\n` };
}

function errorField(error: Error, name: string): unknown {
  return (error as unknown as Record<string, unknown>)[name];
}

/** A system error (a port in use, a permission, a full disk) said in words, with what to do; undefined for others. */
function systemAdvice(error: Error): string | undefined {
  const code = errorCode(error);
  // symlink(2) and link(2) report the target first: the path they failed to create is the second.
  const creates = errorField(error, 'syscall') === 'symlink' || errorField(error, 'syscall') === 'link';
  const path = creates ? errorField(error, 'dest') : errorField(error, 'path');
  const address = errorField(error, 'address');
  const port = errorField(error, 'port');
  const syscall = errorField(error, 'syscall');
  // The metrics listener's error says so: its flags are --metrics-port and --metrics-host.
  const flag = errorField(error, 'listener') === 'metrics' ? '--metrics-' : '--';
  if (syscall === 'listen' || syscall === 'bind') {
    if (code === 'EADDRINUSE')
      return (
        `${address}:${port} is already in use by another process; stop that process, or choose another port ` +
        `with ${flag}port (0 takes any free one)`
      );
    if (code === 'EADDRNOTAVAIL')
      return (
        `${address} is not an address of this machine; choose one of its addresses with ${flag}host (127.0.0.1 ` +
        `for this machine only, 0.0.0.0 for all)`
      );
    if (code === 'EACCES')
      return (
        `this user may not listen on port ${port}; choose a port from 1024 up with ${flag}port (with a proxy or ` +
        `a port forward in front), or give node the capability to bind it (setcap cap_net_bind_service=+ep)`
      );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return (
      `the address ${String(errorField(error, 'hostname'))} cannot be resolved (${code}); give ${flag}host an ` +
      `IP address or a name this machine resolves`
    );
  if (typeof path !== 'string') return undefined;
  if (code === 'EACCES' || code === 'EPERM') return permissionAdvice(path, String(syscall ?? 'open'));
  if (code === 'EROFS') return `${path} is on a read-only file system (EROFS); use a directory on a writable one`;
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return `no space left for ${path} (${code}); free some space or raise the quota, then try again`;
  if (code === 'ENOTDIR') return `part of ${path} is a file, not a directory (ENOTDIR); check the path`;
  return undefined;
}

/** Why this user may not use `path`, and the two ways out: run as its owner, or give it to this user. */
function permissionAdvice(path: string, syscall: string): string {
  const uid = process.geteuid?.() ?? -1;
  const me = describeUser(uid);
  let stats;
  try {
    stats = lstatSync(path);
  } catch (error) {
    const code = errorCode(error);
    if (code === undefined) throw error;
    if (code === 'ENOENT') {
      return (
        `${me} may not create ${path} (${syscall}: permission denied)${directoryOwner(path)}; ` +
        'run this as the owner of its directory, or give the directory to this user (chown)'
      );
    }
    return (
      `${me} may not reach ${path} (${code})${directoryOwner(path)}: ` +
      'a directory on its way is closed to this user; ' +
      "run this as that directory's owner, or open it to this user (chmod o+x)"
    );
  }
  const mode = (stats.mode & 0o7777).toString(8);
  const chown = `chown ${userName(uid) ?? String(uid)} ${shellWord(path)}`;
  const what = `${me} may not ${syscall === 'open' ? 'read or write' : syscall} ${path}`;
  if (stats.uid === uid)
    return (
      `${what}, though it is this user's (mode ${mode}); give this user access to it (chmod u+rw), or check for ` +
      `an ACL or a read-only mount`
    );
  const owner = describeUser(stats.uid);
  return stats.uid === 0
    ? `${what}, which belongs to ${owner} with mode ${mode}; give it to this user (as root: ${chown})`
    : `${what}, which belongs to ${owner} with mode ${mode}; run this as ${userName(stats.uid) ?? owner}, or give it ` +
        `to this user (${chown})`;
}

/** `: D belongs to U with mode M`: the directory a file could not be made in, or nothing when it cannot be seen. */
function directoryOwner(path: string): string {
  const dir = dirname(path);
  let stats;
  try {
    stats = lstatSync(dir, { throwIfNoEntry: false });
  } catch (error) {
    if (errorCode(error) === undefined) throw error;
    return ''; // a directory on the way is closed too: said by the advice as it is
  }
  if (stats === undefined) return '';
  return `: ${dir} belongs to ${describeUser(stats.uid)} with mode ${(stats.mode & 0o7777).toString(8)}`;
}
