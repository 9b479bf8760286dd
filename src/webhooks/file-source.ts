import { CursorFile } from './cursor-file.js';
import type { SubscriptionSource } from './subscription-source.js';
import {
  readSubscriptionFile,
  type Subscription,
  subscriptionFilePath,
  subscriptionFileVersion,
} from './subscription-file.js';

/** The subscriptions of a data directory's webhooks.json, read again when the file changes; cursors beside it. */
export class FileSource implements SubscriptionSource {
  readonly #path: string;
  #version = '';

  private constructor(
    dataDir: string,
    readonly cursors: CursorFile,
  ) {
    this.#path = subscriptionFilePath(dataDir);
  }

  static open(dataDir: string, onError: (error: unknown) => void): FileSource {
    return new FileSource(dataDir, CursorFile.open(dataDir, onError));
  }

  async read(): Promise<Subscription[] | undefined> {
    const version = subscriptionFileVersion(this.#path);
    if (version === this.#version) return undefined;
    const subscriptions = readSubscriptionFile(this.#path) ?? [];
    this.#version = version;
    return subscriptions;
  }

  close(): Promise<void> {
    return this.cursors.flush();
  }
}
