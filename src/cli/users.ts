import { readFileSync } from 'node:fs';
import { errorCode } from '../lib/system-error.js';

/** The name of the user with `uid` (from /etc/passwd), or undefined when it has none there. */
export function userName(uid: number): string | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch (error) {
    if (errorCode(error) === undefined) throw error;
    return undefined;
  }
  return passwd
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[2] === String(uid))?.[0];
}

/** `nobody (uid 65534)`, or `uid 12345` for a user without a name. */
export function describeUser(uid: number): string {
  const name = userName(uid);
  return name === undefined ? `uid ${uid}` : `${name} (uid ${uid})`;
}
