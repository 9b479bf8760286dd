import { join } from 'node:path';
import { nodeFileSystem } from '../lib/file-system.js';
import { readPrivateFileSync } from '../lib/private-file.js';
import { replaceFile } from '../lib/replace-file.js';
import { reportToStderr } from '../lib/system-error.js';

/** Where a subscription stands: the last pet id delivered (or passed over), and the last replay applied. */
export interface Cursor {
  last: number;
  replay?: string | undefined;
}

const CURSOR_FILE = 'webhook-cursors.json';
const FORMAT = 'petstore-webhook-cursors/1';

/**
 * The cursors of every subscription in `webhook-cursors.json`, replaced atomically and fsync'ed.
 * A cursor moves only after its pet was delivered, so a crash loses at most the last moves: those
 * pets are delivered again (same webhook-id), none is skipped. Writes are coalesced: one in flight,
 * the next carries every move made meanwhile, so a fast receiver costs a few fsyncs a second, not one a pet.
 * A new subscription's start is waited for instead: it is not delivered before a crash can no longer lose it.
 */
export class CursorFile {
  readonly #path: string;
  readonly #cursors: Map<string, Cursor>;
  readonly #onError: (error: unknown) => void;
  #writing: Promise<void> | undefined;
  #dirty = false;
  /** Starts waiting for the next write to reach the disk (or fail). */
  readonly #waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];

  private constructor(path: string, cursors: Map<string, Cursor>, onError: (error: unknown) => void) {
    this.#path = path;
    this.#cursors = cursors;
    this.#onError = onError;
  }

  static open(dataDir: string, onError: (error: unknown) => void): CursorFile {
    const path = join(dataDir, CURSOR_FILE);
    const text = readPrivateFileSync(path)?.toString('utf8');
    const document = (text === undefined ? { format: FORMAT, cursors: {} } : parseOrNothing(text)) as {
      format?: unknown;
      cursors?: unknown;
    };
    if (document.format !== FORMAT || typeof document.cursors !== 'object' || document.cursors === null) {
      throw new TypeError(
        `${path} is not a webhook cursor file (expected "format": "${FORMAT}"); ` +
          'move it away to deliver from the newest pet on',
      );
    }
    const cursors = new Map<string, Cursor>();
    for (const [id, cursor] of Object.entries(document.cursors as Record<string, Partial<Cursor>>)) {
      if (Number.isSafeInteger(cursor.last))
        cursors.set(id, {
          last: cursor.last as number,
          replay: typeof cursor.replay === 'string' ? cursor.replay : undefined,
        });
    }
    return new CursorFile(path, cursors, onError);
  }

  get(id: string): Cursor | undefined {
    return this.#cursors.get(id);
  }

  async start(id: string, cursor: Cursor): Promise<boolean> {
    this.#cursors.set(id, cursor);
    try {
      await new Promise<void>((resolve, reject) => {
        this.#waiting.push({ resolve, reject });
        this.#write();
      });
    } catch (error) {
      // Not on disk, so not kept: the next try starts it afresh, after the pets there then.
      if (this.#cursors.get(id) === cursor) this.#cursors.delete(id);
      throw error;
    }
    return true;
  }

  set(id: string, cursor: Cursor): void {
    this.#cursors.set(id, cursor);
    this.#write();
  }

  delete(id: string): void {
    if (this.#cursors.delete(id)) this.#write();
  }

  /** Resolves once every change made so far is on disk (or its write failed and was reported). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  #write(): void {
    this.#dirty = true;
    this.#writing ??= (async () => {
      while (this.#dirty) {
        this.#dirty = false;
        const waiting = this.#waiting.splice(0);
        const text = `${JSON.stringify({ format: FORMAT, cursors: Object.fromEntries(this.#cursors) })}\n`;
        try {
          await replaceFile(nodeFileSystem, this.#path, [text], reportToStderr);
        } catch (error) {
          // A failed write leaves the older cursors on disk: their pets would only be delivered again.
          this.#onError(error);
          for (const start of waiting) start.reject(error);
          continue;
        }
        for (const start of waiting) start.resolve();
      }
      this.#writing = undefined;
    })();
  }
}

/** The document in `text`, or an empty one when it is not JSON (refused just after, with advice). */
function parseOrNothing(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return {};
  }
}
