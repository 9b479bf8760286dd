/**
 * `petstore keys …` on a data directory, run in this process as the command line runs it, for tests
 * to which a key in keys.json is only a setting (keys.test.ts runs the command line itself; a process
 * for each command costs about 0.3 s of CPU).
 */
import assert from 'node:assert/strict';
import { keyFileStorage, type NewKeyOptions, runKeysCommand } from '#dist/cli/keys-command.js';

/** The lines `petstore keys <args> --data-dir <dir>` prints; a refusal is thrown as the command's error. */
export async function keysCommand(dir: string, args: string[], options: NewKeyOptions = {}): Promise<string[]> {
  const lines: string[] = [];
  const command = ['petstore', 'keys', ...args, '--data-dir', dir].join(' ');
  await runKeysCommand(keyFileStorage(dir, command), args, options, (line) => lines.push(line));
  return lines;
}

/** `keys create` in `dir`: the key printed once, and its id as `keys list` shows it. */
export async function createKey(dir: string, label: string): Promise<{ key: string; id: string }> {
  const created = await keysCommand(dir, ['create'], { label });
  const key = created.map((l) => l.trim()).find((l) => /^[A-Za-z0-9\-._~+/]{20,}=*$/.test(l));
  const row = (await keysCommand(dir, ['list'])).find((l) => l.includes(label));
  assert.ok(key !== undefined && row !== undefined, created.join('\n'));
  return { key, id: row.trim().split(/\s+/)[0] as string };
}
