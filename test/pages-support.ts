/** A data directory whose pages are large: what a client that never reads its answers leaves unsent. */
import type { TestContext } from 'node:test';
import { FileStore } from './package.js';
import { tempDirFor } from './support.js';

/** A data directory of 100 pets whose names are 256 characters of four UTF-8 bytes each (pages of ~160 kB). */
export async function bigPages(t: TestContext): Promise<string> {
  const dir = await tempDirFor(t);
  const store = await FileStore.open(dir);
  const name = (i: number): string => `${i}`.padEnd(256, 'x').replace(/x/g, '\u{1D4B3}').slice(0, 512);
  await Promise.all(Array.from({ length: 100 }, (_, i) => store.create({ name: name(i), categoryId: BigInt(i) })));
  await store.close();
  return dir;
}
