/**
 * The oldest Node the server is tested on, as package.json's `engines` says, and .ci/run runs the
 * whole suite on it. Older ones start (Node 18.19, 20.11 and 20.12.2 were tried), but the suite finds
 * them wanting: on 18.19 and 20.12 a client's reset of a TLS connection ended the server (fixed since),
 * and up to 20.19.1 Node's HTTP parser takes a header name with a space, or an empty one, that the
 * contract's 400 needs refused (fuzz.test.ts; 20.19.2's parser refuses them). The command line refuses
 * them at once, saying what is needed and what was found, instead of failing later in a way that
 * would look like a bug of its own.
 */
const NEEDED = [20, 19, 2] as const;

/** Why Node `version` (`process.versions.node`, `20.11.1`) will not do, or undefined when it does. */
export function nodeVersionProblem(version: string): string | undefined {
  const parts = version.split('.').map(Number);
  for (const [i, needed] of NEEDED.entries()) {
    const part = parts[i] ?? 0;
    if (part !== needed) return part > needed ? undefined : refusal(version);
  }
  return undefined;
}

const refusal = (version: string): string =>
  `this server needs Node ${NEEDED.join('.')} or later; this is Node ${version} (${process.execPath})`;
