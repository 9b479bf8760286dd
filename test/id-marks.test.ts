/**
 * The store's two id marks (docs/design.md, "Words used here"): `handedOut` and `recorded`. A new
 * journal begins after a snapshot whose lastId is `handedOut`, so the records then account for every
 * id: the first line of that journal needs no skip line for ids handed out before it.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { IdMarks } from '#dist/store/file/id-marks.js';
import { FileStore } from '#dist/store/file/file-store.js';
import type { Pet } from '#dist/pet/pet.js';
import { tempDirFor } from './support.js';
import { idsText, journalText, recordLine, snapshotText } from './store-support.js';

test('ids handed out without a line leave recorded behind, until a line records them or a new journal begins', () => {
  const ids = new IdMarks(3, 3);
  assert.deepEqual([ids.handOut(), ids.handOut()], [4, 5]);
  assert.deepEqual([ids.handedOut, ids.recorded], [5, 3], 'two creates refused: their ids have no line');
  ids.newJournal();
  assert.deepEqual([ids.handedOut, ids.recorded], [5, 5], 'the snapshot before the new journal accounts for them');
  ids.newJournal();
  assert.deepEqual([ids.handedOut, ids.recorded], [5, 5], 'with every id accounted for, nothing moves');
  ids.handOut();
  ids.recordedUpTo(6);
  assert.deepEqual([ids.handedOut, ids.recorded], [6, 6]);
});

test('a directory rewritten at start with ids reserved past its records: the next line follows the new snapshot, no skip line', async (t) => {
  const dir = await tempDirFor(t);
  const pets: Pet[] = [
    { id: 1, name: 'Rex', categoryId: 7n },
    { id: 2, name: 'Tom', categoryId: 8n },
  ];
  // Format 3, rewritten in format 4 at open; pets-ids.json says ids up to 9 may have reached clients (unclean stop).
  await writeFile(join(dir, 'pets.json'), snapshotText(pets.slice(0, 1), 2, 1, 3), { mode: 0o600 });
  await writeFile(join(dir, 'pets-journal.2.jsonl'), `${recordLine(pets[1] as Pet)}\n`, { mode: 0o600 });
  await writeFile(join(dir, 'pets-ids.json'), idsText(9, false), { mode: 0o600 });
  const store = await FileStore.open(dir, { onRepair: () => {} });
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText(pets, 3, 9), 'it accounts for ids to 9');
  const next = await store.create({ name: 'Kit', categoryId: 9n });
  assert.equal(next.id, 10);
  assert.equal(
    await readFile(join(dir, 'pets-journal.3.jsonl'), 'utf8'),
    journalText([next], 9),
    'pet 10 follows the snapshot at once',
  );
  await store.close();
});
