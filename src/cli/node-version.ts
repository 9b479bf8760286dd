/**
 * The oldest Node the server is tested on, as package.json's `engines` says. Older ones start
 * (Node 18.19 and 20.11 were tried), but the suite is not run there, and its one run on 18.19 found
 * a client's reset of a TLS connection ending the server (fixed since for 20.12, where the same run
 * found it): the command line refuses them at once, saying what is needed and what was found,
 * instead of failing later in a way that would look like a bug of its own.
 */
const NEEDED = [20, 12] as const;

/** Why Node `version` (`process.versions.node`, `20.11.1`) will not do, or undefined when it does. */
export function nodeVersionProblem(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > NEEDED[0] || (major === NEEDED[0] && minor >= NEEDED[1])) return undefined;
  return `this server needs Node ${NEEDED.join('.')} or later; this is Node ${version} (${process.execPath})`;
}
