/**
 * docs/operations.md's "Trying S3 on this machine" run as written: s3rver started by its command line,
 * a server replicating to it, then `verify --from` and `restore` from the bucket. Only the port and
 * the /tmp paths are changed, to a free port and directories of the test's own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { freePort, launchServer, request, runCli, stopProcess, TEST_KEY, tempDirFor, waitFor } from './support.js';

const ROOT = resolve(__dirname, '../..');

/** The ```sh blocks of the paragraph that starts with `heading`, up to the next bold paragraph. */
function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(heading);
  assert.notEqual(start, -1, `operations.md has "${heading}"`);
  const end = markdown.indexOf('\n**', start + heading.length);
  const section = markdown.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
function accepting(port: number): Promise<boolean> {
  return new Promise((r) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => r(socket.destroy() !== undefined));
    socket.once('error', () => r(false));
  });
}

test('the S3 tryout of operations.md runs as written: s3rver, a server replicating to it, verify and restore', {
  timeout: 60_000,
}, async (t) => {
  const markdown = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const blocks = shellBlocks(markdown, '**Trying S3 on this machine.**');
  assert.equal(blocks.length, 3, 'three blocks: s3rver, the server, verify and restore');
  const work = await tempDirFor(t);
  const port = await freePort();
  const local = (text: string): string =>
    text
      .replaceAll('4568', String(port))
      .replaceAll('/tmp/s3rver', join(work, 's3rver'))
      .replaceAll('/tmp/petstore-try', join(work, 'data'))
      .replaceAll('/tmp/petstore-restored', join(work, 'restored'));
  const [s3rverBlock, serverBlock, checkBlock] = blocks.map((b) => local(b).trim()) as [string, string, string];

  const [npx, s3rver, ...s3rverArgs] = s3rverBlock.split(/\s+/);
  assert.deepEqual([npx, s3rver], ['npx', 's3rver']);
  const store = spawn(join(ROOT, 'node_modules', '.bin', 's3rver'), s3rverArgs, { cwd: ROOT, stdio: 'ignore' });
  const storeExited = new Promise((r) => store.once('exit', r));
  t.after(async () => {
    store.kill();
    await storeExited;
  });
  let up = false;
  const poll = async (): Promise<void> => {
    while (!up && store.exitCode === null) up = await accepting(port);
  };
  await Promise.race([poll(), waitFor(() => up, 15_000, 's3rver listening')]);

  const [exportLine, serverLine] = serverBlock.split('\n') as [string, string];
  assert.match(exportLine, /^export /);
  const env = Object.fromEntries(
    exportLine
      .slice('export '.length)
      .split(' ')
      .map((pair) => pair.split('=') as [string, string]),
  );
  const [node, serverJs, ...serverArgs] = serverLine.split(/\s+/);
  assert.deepEqual([node, serverJs], ['node', 'dist/server.js']);
  const server = await launchServer(process.execPath, [serverJs as string, ...serverArgs, '--port', '0'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PETSTORE_API_KEYS: TEST_KEY, ...env },
  });
  t.after(() => stopProcess(server));
  const body = '{"name":"Rex","categoryId":1}';
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body,
  });
  assert.equal(created.status, 201);

  const [verifyLine, restoreLine] = checkBlock.split('\n').map((line) => line.split(/\s+/).slice(2)) as [
    string[],
    string[],
  ];
  // The pet is in the copy once a round after its create has shipped: restored until it is there.
  const restored = join(work, 'restored');
  let restore = { code: null as number | null, stdout: '', stderr: '' };
  for (let attempt = 1, deadline = Date.now() + 10_000; !/^restored 1 pet /.test(restore.stdout); attempt++) {
    assert.ok(Date.now() < deadline, `the pet restored within 10 s: ${restore.stdout}${restore.stderr}`);
    if (attempt > 1) await new Promise((r) => setTimeout(r, 100));
    const dest = attempt === 1 ? restored : `${restored}-${attempt}`;
    restore = await runCli(
      restoreLine.map((arg) => (arg === restored ? dest : arg)),
      env,
    );
    assert.equal(restore.code, 0, restore.stderr);
  }
  assert.match(restore.stdout, /^restored 1 pet \(last id 1\) .* from s3:\/\/petstore-replicas\/try to /);
  const verify = await runCli(verifyLine, env);
  assert.equal(verify.code, 0, verify.stderr);
  assert.match(verify.stdout, /every position and object intact/);
});
