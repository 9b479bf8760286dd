/**
 * What replication reads of a data directory: the open journal only up to its fdatasync'd length
 * (bytes past it may never have been acknowledged), and every file handle it opens closed again.
 */
import assert from 'node:assert/strict';
import { appendFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { durableFiles, readRange } from '#dist/store/file/replication/durable-files.js';
import { dataDir, journalText, snapshotText } from './store-support.js';

test('the open journal counts up to its durable length, not its size on disk', async (t) => {
  const dir = await dataDir(t);
  const durable = journalText([{ id: 1, name: 'a', categoryId: 1n }]);
  await writeFile(join(dir, 'pets.json'), snapshotText([], 1, 0));
  await writeFile(join(dir, 'pets-journal.1.jsonl'), durable);
  // Bytes written but not yet fdatasync'd: a crash may cut them, and no client was told they are stored.
  await appendFile(join(dir, 'pets-journal.1.jsonl'), journalText([{ id: 2, name: 'b', categoryId: 2n }], 1));
  const length = Buffer.byteLength(durable);
  const { files } = await durableFiles(dir, () => ({ generation: 1, length, idsHandedOut: 2 }));
  assert.deepEqual(files.find((f) => f.name === 'pets-journal.1.jsonl'), { name: 'pets-journal.1.jsonl', kind: 'appended', length, stamp: '' });
});

test('readRange closes its file: 200 reads leave no descriptor open', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets-journal.1.jsonl'), 'x'.repeat(100));
  const open = async (): Promise<number> => (await readdir('/proc/self/fd')).length;
  const before = await open();
  for (let i = 0; i < 200; i++) assert.equal((await readRange(dir, 'pets-journal.1.jsonl', 10, 20)).toString(), 'x'.repeat(10));
  assert.ok((await open()) - before < 5, `${(await open()) - before} more descriptors open`);
});
