/**
 * Local users: what the server and `keys create` make is private (directories 0700, files 0600), and
 * the server refuses data it does not control alone — at start, and when the key file changes later.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chmod, chown, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { newKey, updateKeyFile, type StoredKey } from '#dist/auth/key-file.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { petJson } from '#dist/pet/codec.js';
import { request, runCli, startError, startServer, tempDirFor, waitFor } from './support.js';
import { NOBODY, OTHER_USER, asOtherUser, serveAsOtherUser, serverForOtherUser } from './other-user.js';
import { dataDir, defer } from './store-support.js';
import type { Logger } from './package.js';

const asRoot = process.getuid?.() === 0 ? false : 'needs root to chown files to another user';

/** A data directory with a key file (one key, returned), a snapshot and a journal, all 0600. */
async function populated(t: TestContext): Promise<{ dir: string; key: string }> {
  const dir = join(await dataDir(t), 'data');
  await mkdir(dir, { mode: 0o700 });
  const { key, record } = newKey('test');
  await updateKeyFile(join(dir, 'keys.json'), () => ({ keys: [record], result: undefined }));
  await writeFile(
    join(dir, 'pets.json'),
    `{"format":"petstore-pets/1","pets":[\n${petJson({ id: 1, name: 'Rex', categoryId: 7n })}\n]}\n`,
    { mode: 0o600 },
  );
  await writeFile(join(dir, 'pets-journal.1.jsonl'), `${petJson({ id: 2, name: 'Tom', categoryId: 7n })}\n`, {
    mode: 0o600,
  });
  return { dir, key };
}

test('the server refuses to start, naming it, on a data directory writable by group or others', async (t) => {
  for (const bits of [0o770, 0o707, 0o777]) {
    const { dir, key } = await populated(t);
    await chmod(dir, bits);
    const { code, stdout, stderr } = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: key }, 5000);
    assert.equal(code, 1, `mode ${bits.toString(8)}: ${stdout}${stderr}`);
    assert.ok(stderr.includes(dir), stderr);
    assert.match(stderr, /writable by group or others/);
  }
});

test('a data directory of this user that holds no data yet is made private instead, and said so; with anything in it, it is refused', async (t) => {
  const root = await tempDirFor(t);
  // As a fresh clone under umask 002 has it: data/ 0775 with only its .gitkeep.
  const fresh = join(root, 'fresh');
  await mkdir(fresh);
  await writeFile(join(fresh, '.gitkeep'), '');
  await chmod(fresh, 0o775);
  const repairs: string[] = [];
  const store = await FileStore.open(fresh, { onRepair: (message) => repairs.push(message) });
  await store.close();
  assert.equal((await stat(fresh)).mode & 0o777, 0o700);
  assert.deepEqual(repairs, [`made ${fresh} private (mode 775 → 700), as it held no data yet`]);
  // Something in it that the store did not put there: another user may have, so nothing is changed.
  const used = join(root, 'used');
  await mkdir(used);
  await writeFile(join(used, 'notes.txt'), '');
  await chmod(used, 0o775);
  await assert.rejects(FileStore.open(used), {
    message: `${used} is writable by group or others (mode 775); refusing to use it until it is not (chmod go-w)`,
  });
  assert.equal((await stat(used)).mode & 0o777, 0o775, 'left as it was');
  // Another user's empty directory is not this server's to change.
  const theirs = join(root, 'theirs');
  await mkdir(theirs, { mode: 0o775 });
  await chmod(theirs, 0o775);
  await chown(theirs, 65534, 65534);
  await assert.rejects(FileStore.open(theirs), /writable by group or others|owned by uid 65534/);
  assert.equal((await stat(theirs)).mode & 0o777, 0o775);
});

test('the server refuses to start, naming it, on a key or data file writable by group or others', async (t) => {
  for (const name of ['keys.json', 'pets.json', 'pets-journal.1.jsonl']) {
    for (const bits of [0o620, 0o602]) {
      const { dir } = await populated(t);
      await chmod(join(dir, name), bits);
      const error = await startError(dir);
      assert.ok(error.message.includes(join(dir, name)), `${name} ${bits.toString(8)}: ${error.message}`);
      assert.match(error.message, /writable by group or others/);
    }
  }
  const { dir, key } = await populated(t);
  await chmod(join(dir, 'keys.json'), 0o666);
  const cli = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: key }, 5000);
  assert.equal(cli.code, 1, cli.stdout + cli.stderr);
  assert.match(cli.stderr, /^cannot start: .*keys\.json.*writable by group or others/m);
});

test('the server refuses to start on a data directory, key file or data file owned by another user', {
  skip: asRoot,
}, async (t) => {
  for (const name of ['', 'keys.json', 'pets.json', 'pets-journal.1.jsonl']) {
    const { dir } = await populated(t);
    await chown(join(dir, name), NOBODY, NOBODY);
    const error = await startError(dir);
    assert.ok(error.message.includes(name === '' ? dir : join(dir, name)), error.message);
    // Not "chown": given to root, a file of the service user's would be one its server can no longer use.
    assert.match(
      error.message,
      new RegExp(`owned by uid ${NOBODY}, .*: run this as the user it belongs to \\(uid ${NOBODY}\\)$`),
    );
  }
});

test("a server running as another user accepts root-owned files in its directory, and refuses a third user's", {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const { dir, key } = await populated(t);
  await chmod(join(dir, '..'), 0o711); // nobody must reach its directory
  await chown(dir, NOBODY, NOBODY);
  // Root's files need only be readable; the journal is written, so it is the server user's.
  for (const name of ['keys.json', 'pets.json']) await chmod(join(dir, name), 0o644);
  await chown(join(dir, 'pets-journal.1.jsonl'), NOBODY, NOBODY);
  const run = (): Promise<{ code: number | null; output: string; url?: string }> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [serverJs, '--port', '0', '--data-dir', dir], {
        uid: NOBODY,
        gid: NOBODY,
        env: { PATH: process.env.PATH },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      let asked = false;
      const onData = (s: string): void => {
        output += s;
        const url = /"msg":"listening","url":"(http:\/\/[^"]+)\/v1"/.exec(output)?.[1];
        if (url !== undefined && !asked) {
          asked = true;
          // Listening: ask for the pets, then stop it.
          void request(url, 'GET', '/v1/pets', { auth: key }).then((res) => {
            output += `\nGET ${res.status} ${res.text}`;
            child.kill('SIGTERM');
          });
        }
      };
      child.stdout.setEncoding('utf8').on('data', onData);
      child.stderr.setEncoding('utf8').on('data', (s: string) => (output += s));
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, output });
      });
    });
  const accepted = await run();
  assert.equal(accepted.code, 0, accepted.output);
  assert.match(accepted.output, /GET 200 \[.*"Rex".*"Tom"/);
  await chown(join(dir, 'keys.json'), 12345, 12345);
  const refused = await run();
  assert.equal(refused.code, 1, refused.output);
  assert.match(refused.output, /keys\.json.*owned by uid 12345/);
});

test("a key file that becomes writable by others, or is replaced by another user's, is not reloaded; the previous keys stay", {
  skip: asRoot,
}, async (t) => {
  const { dir, key } = await populated(t);
  const errors: string[] = [];
  const logger: Logger = {
    request() {},
    info() {},
    error: (message, error) => errors.push(`${message}: ${String((error as Error)?.message)}`),
  };
  const server = await startServer({ dataDir: dir, keys: [], logger });
  defer(t, () => server.stop());
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
  const intruder = newKey('intruder');
  const keyFile = join(dir, 'keys.json');
  const document = (record: StoredKey): string => JSON.stringify({ keys: [record] });

  // A local user writes through a key file that was left writable by others.
  await chmod(keyFile, 0o666);
  await writeFile(keyFile, document(intruder.record));
  // Or replaces it with a file of their own.
  const attacks = [
    async () => {},
    async () => {
      await chmod(keyFile, 0o600);
      const theirs = join(dir, 'theirs.json');
      await writeFile(theirs, document(intruder.record), { mode: 0o600 });
      await chown(theirs, NOBODY, NOBODY);
      await rename(theirs, keyFile);
    },
  ];
  for (const attack of attacks) {
    await attack();
    const before = errors.length;
    await new Promise((r) => setTimeout(r, 1100)); // the key file is checked at most once a second
    assert.equal(
      (await request(server.url, 'GET', '/v1/pets', { auth: intruder.key })).status,
      401,
      "the intruder's key is refused",
    );
    await waitFor(() => errors.length > before, 1000, 'the refused reload is reported');
    assert.match(errors.at(-1) ?? '', /keys\.json/);
    assert.equal(
      (await request(server.url, 'GET', '/v1/pets', { auth: key })).status,
      200,
      'the previous key still works',
    );
  }
  assert.equal(
    JSON.parse(await readFile(keyFile, 'utf8')).keys[0].sha256,
    intruder.record.sha256,
    'the test did replace the file',
  );
});

/** An empty data directory of the `nobody` user, 0700, as `install -d -m700 -o nobody` makes it, which that user can reach. */
async function othersDirectory(t: TestContext): Promise<string> {
  const base = await dataDir(t);
  await chmod(base, 0o711);
  const dir = join(base, 'data');
  await mkdir(dir, { mode: 0o700 });
  await chown(dir, NOBODY, NOBODY);
  return dir;
}

test('"keys create" as root in another user\'s directory is refused, saying how to run it as that user; run so, the key works there', {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const dir = await othersDirectory(t);
  const refused = await runCli(['keys', 'create', '--data-dir', dir, '--label', 'ops key'], {}, 5000, { serverJs });
  assert.equal(refused.code, 1, refused.stdout + refused.stderr);
  const advice = `runuser -u nobody -- node ${serverJs} keys create --data-dir ${dir} --label 'ops key'`;
  assert.equal(
    refused.stderr,
    `keys create failed: ${dir} belongs to nobody (uid ${NOBODY}): a key file root wrote there would be root's, ` +
      `and that user's server could not read it; run this as that user: ${advice}\n`,
  );
  assert.deepEqual(await readdir(dir), [], 'nothing was written, no lock left');
  // The advice, as given, makes a key file of that user's that its server reads.
  const key = execFileSync('sh', ['-c', advice], { encoding: 'utf8', env: { PATH: process.env.PATH } }).split(
    '\n',
  )[1] as string;
  assert.equal((await stat(join(dir, 'keys.json'))).uid, NOBODY);
  const server = await serveAsOtherUser(t, serverJs, ['--data-dir', dir]);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
});

test("a key file of root's, 0600, in the server user's directory: the start names it and says how to give it to that user", {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const dir = await othersDirectory(t);
  const { key, record } = newKey('made by root');
  await updateKeyFile(join(dir, 'keys.json'), () => ({ keys: [record], result: undefined }));
  const refused = await runCli(['--port', '0', '--data-dir', dir], {}, 60_000, { serverJs, user: OTHER_USER });
  assert.equal(refused.code, 1, refused.stdout + refused.stderr);
  assert.equal(
    refused.stderr,
    `cannot start: nobody (uid ${NOBODY}) may not read or write ${dir}/keys.json, which belongs to root (uid 0) ` +
      `with mode 600; give it to this user (as root: chown nobody ${dir}/keys.json)\n`,
  );
  execFileSync('chown', ['nobody', join(dir, 'keys.json')]);
  const server = await serveAsOtherUser(t, serverJs, ['--data-dir', dir]);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
});
