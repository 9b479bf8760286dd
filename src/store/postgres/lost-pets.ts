import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';

const NEWLINE = Buffer.from('\n');

/**
 * Writes the pets a database lost, each its exact JSON text on a line, to a new file
 * `lost-pets-<time>.jsonl` in `directory` for the operator; returns its path. The file is private
 * (0600) and new (never one already there), and it and its name are durable before this returns.
 */
export async function writeLostPets(directory: string, pets: readonly Uint8Array[], now = new Date()): Promise<string> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  // A name without colons, which some file systems and tools refuse.
  const path = join(directory, `lost-pets-${now.toISOString().replace(/:/g, '-')}.jsonl`);
  const file = await open(path, 'wx', 0o600);
  try {
    await file.writeFile(Buffer.concat(pets.flatMap((pet) => [pet, NEWLINE])));
    await file.sync();
  } finally {
    await file.close();
  }
  const parent = await open(directory, 'r');
  try {
    await parent.sync();
  } finally {
    await parent.close();
  }
  return path;
}
