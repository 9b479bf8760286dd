/**
 * The benchmark's pets: the same deterministic pets for the seeded server and the floor, so both
 * answer the same bytes. Half are "sold" (even ids); the rest alternate "available" and "pending".
 */
import { closeSync, copyFileSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export function makePet(id) {
  const status = id % 2 === 0 ? 'sold' : id % 4 === 1 ? 'available' : 'pending';
  // Key order matches the server's own serialisation (src/pet.ts petJson).
  return { id, name: `pet-${id}`, categoryId: 1 + (id % 50), status };
}

/**
 * Writes a `pets.json` snapshot of pets 1..count in the store's format 2 (src/store/data-format.ts),
 * covering the journals before 1: a directory holding it also needs the empty `pets-journal.1.jsonl`.
 */
export function writeSnapshot(path, count) {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, '{"format":"petstore-pets/2","journal":1,"pets":[\n');
    let chunk = '';
    for (let id = 1; id <= count; id++) {
      chunk += JSON.stringify(makePet(id)) + (id < count ? ',\n' : '\n');
      if (chunk.length > 1 << 20) {
        writeSync(fd, chunk);
        chunk = '';
      }
    }
    writeSync(fd, count === 0 ? ']}\n' : chunk + ']}\n');
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes `dir` a stopped server's data directory holding the pets of `snapshot` (a file written by
 * writeSnapshot): the snapshot as pets.json and the empty journal it names, without which the
 * server refuses the directory as an incomplete copy.
 */
export function seedDirectory(dir, snapshot) {
  copyFileSync(snapshot, join(dir, 'pets.json'));
  writeFileSync(join(dir, 'pets-journal.1.jsonl'), '', { mode: 0o600 });
}
