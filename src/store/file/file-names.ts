/** The names of the files in a data directory (their content: data-format.ts). */
export const SNAPSHOT_FILE = 'pets.json';
/** The ids reserved ahead (id-reservation.ts). */
export const IDS_FILE = 'pets-ids.json';
/** The directory lock (lock.ts): a file of this server's running, never copied. */
export const LOCK_FILE = 'petstore.lock';
const JOURNAL_NAME = /^pets-journal\.([0-9]{1,15})\.jsonl$/;
// Temp files of a snapshot write, or of taking the directory lock, that a crash left behind.
const TEMP_NAME = /^(\.pets\.json|\.pets-ids\.json|petstore\.lock)\.[0-9a-f]+\.tmp$/;

export const journalFile = (generation: number): string => `pets-journal.${generation}.jsonl`;
export const isTempFile = (name: string): boolean => TEMP_NAME.test(name);

export function journalGeneration(name: string): number | undefined {
  const match = JOURNAL_NAME.exec(name);
  return match === null ? undefined : Number(match[1]);
}
