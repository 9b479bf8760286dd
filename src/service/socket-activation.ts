import { fstatSync } from 'node:fs';
import { errorCode } from '../lib/system-error.js';

/**
 * systemd socket activation (sd_listen_fds(3)): when systemd holds the listening socket and starts
 * this process with it, the socket outlives every restart and connections wait in its backlog while a
 * new process loads, instead of being refused. Set only for this process: LISTEN_PID is its pid.
 */

/** The first descriptor systemd passes (SD_LISTEN_FDS_START): after stdin, stdout and stderr. */
const FIRST_FD = 3;

export interface ActivatedSocket {
  fd: number;
  /** The socket unit's FileDescriptorName= (default: the unit's name), from LISTEN_FDNAMES. */
  name: string | undefined;
}

/**
 * The listening socket passed to this process, or undefined when there is none for it. The variables
 * are removed once read, as sd_listen_fds(1) does, so that no process started from here takes them
 * for its own. More than one socket is refused: the server listens on one.
 */
export function activatedSocket(env: NodeJS.ProcessEnv, pid = process.pid): ActivatedSocket | undefined {
  const { LISTEN_PID: forPid, LISTEN_FDS: count, LISTEN_FDNAMES: names } = env;
  if (forPid === undefined || count === undefined) return undefined;
  // A variable left by a parent that was activated itself is not this process's.
  if (forPid !== String(pid)) return undefined;
  delete env.LISTEN_PID;
  delete env.LISTEN_FDS;
  delete env.LISTEN_FDNAMES;
  if (count === '0') return undefined;
  if (count !== '1') {
    const why = /^[1-9][0-9]*$/.test(count) ? `${count} sockets` : `LISTEN_FDS="${count}", not a count of sockets`;
    const message = `systemd passed ${why}; the server listens on one: give its socket unit one ListenStream=`;
    throw Object.assign(new TypeError(message), { code: 'ERR_PETSTORE_SOCKET_ACTIVATION' });
  }
  // Node's own refusal of a descriptor that is not a socket is a bare "listen EINVAL".
  if (!isSocket(FIRST_FD)) {
    throw Object.assign(
      new TypeError(`LISTEN_FDS=1 is set for this process, but fd ${FIRST_FD} is not an open socket`),
      { code: 'ERR_PETSTORE_SOCKET_ACTIVATION' },
    );
  }
  return { fd: FIRST_FD, name: names === undefined || names === '' ? undefined : names };
}

function isSocket(fd: number): boolean {
  try {
    return fstatSync(fd).isSocket();
  } catch (error) {
    if (errorCode(error) !== 'EBADF') throw error;
    return false;
  }
}

/**
 * Node's refusal of a descriptor it cannot listen on (a datagram socket, a connected one) is a bare
 * "listen EINVAL": said here with the descriptor and the socket it must be. Other errors are returned as they are.
 */
export function descriptorRefused(fd: number, error: Error): Error {
  if (errorCode(error) !== 'EINVAL') return error;
  const message =
    `fd ${fd} cannot be listened on (listen EINVAL): it must be a stream socket, TCP or Unix ` +
    '(a socket unit passes one with ListenStream=), not a datagram socket (ListenDatagram=)';
  return Object.assign(new TypeError(message, { cause: error }), { code: 'ERR_PETSTORE_SOCKET_ACTIVATION' });
}
