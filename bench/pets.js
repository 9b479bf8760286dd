/**
 * The benchmark's pets: the same deterministic pets for the seeded server and the floor, so both
 * answer the same bytes. Half are "sold" (even ids); the rest alternate "available" and "pending".
 */
import { closeSync, copyFileSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

export function makePet(id) {
  const status = id % 2 === 0 ? 'sold' : id % 4 === 1 ? 'available' : 'pending';
  // Key order matches the server's own serialisation (src/pet.ts petJson).
  return { id, name: `pet-${id}`, categoryId: 1 + (id % 50), status };
}

/**
 * Writes a `pets.json` snapshot of pets 1..count in the store's format 3 (src/store/file/snapshot.ts),
 * covering the journals before 1: a directory holding it also needs the empty `pets-journal.1.jsonl`.
 * Each pet's line is `[pet,"crc"]`, the CRC-32 of the line before the checksum's quote; the file ends
 * with the count, the last id and the CRC-32 of everything before that checksum.
 */
export function writeSnapshot(path, count) {
  const fd = openSync(path, 'wx', 0o600);
  try {
    let checksum = 0;
    const write = (text) => {
      const bytes = Buffer.from(text);
      checksum = crc32(bytes, checksum);
      writeSync(fd, bytes);
    };
    write('{"format":"petstore-pets/3","journal":1,"pets":[\n');
    let chunk = '';
    for (let id = 1; id <= count; id++) {
      const covered = `[${JSON.stringify(makePet(id))},`;
      chunk += `${covered}"${crc32(Buffer.from(covered)).toString(16).padStart(8, '0')}"]${id < count ? ',\n' : '\n'}`;
      if (chunk.length > 1 << 20) {
        write(chunk);
        chunk = '';
      }
    }
    write(`${chunk}],"count":${count},"lastId":${count},`);
    writeSync(fd, `"crc":"${checksum.toString(16).padStart(8, '0')}"}\n`);
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

/**
 * The first page of `limit` pets with `status` (any when undefined) of `texts` (each pet's JSON text,
 * index id - 1, `statuses` beside them), as the bench's bare servers answer a list: the JSON array,
 * the id of its last pet, and whether more follow.
 */
export function firstPage(texts, statuses, limit, status) {
  const page = [];
  let last = 0;
  for (let i = 0; i < texts.length && page.length < limit; i++) {
    if (status === undefined || statuses[i] === status) {
      page.push(texts[i]);
      last = i + 1;
    }
  }
  return { body: `[${page.join(',')}]`, last, more: page.length === limit && last < texts.length };
}
