/**
 * A client of `GET /v1/pets` as `text/event-stream`, for the stream tests over the file store and
 * PostgreSQL: it keeps every byte received, tells how the stream ended, and parses whole events.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { TEST_KEY, waitFor } from './support.js';

export interface StreamClient {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every byte of the body so far, as text. */
  text(): string;
  /** The whole events so far, in order. */
  events(): StreamEvent[];
  /** Resolves once the body is over: 'end' when the server ended it cleanly, 'aborted' when cut. */
  ended: Promise<'end' | 'aborted'>;
  /** Waits until `check(text)` holds, at most `ms`. */
  until(check: (text: string) => boolean, ms: number, what: string): Promise<void>;
  close(): void;
}

export interface StreamEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** Opens a stream of `path` (Accept: text/event-stream, the test key), resolved once its head is in. */
export function openStream(
  baseUrl: string,
  path = '/v1/pets',
  headers: Array<[string, string]> = [],
  key: string = TEST_KEY,
): Promise<StreamClient> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path,
        agent: false,
        headers: [
          ['host', url.host],
          ['accept', 'text/event-stream'],
          ['authorization', `Bearer ${key}`],
          ...headers,
        ].flat(),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const ended = new Promise<'end' | 'aborted'>((settle) => {
          res.once('end', () => settle('end'));
          res.once('aborted', () => settle('aborted'));
          res.once('error', () => settle('aborted'));
        });
        const text = (): string => Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          events: () => parseEvents(text()),
          ended,
          until: (check, ms, what) => waitFor(() => check(text()), ms, what),
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The whole events of a stream's text (a field line per line, a blank line ending each); comments and retry skipped. */
export function parseEvents(text: string): StreamEvent[] {
  const events: StreamEvent[] = [];
  const blocks = text.split('\n\n');
  blocks.pop(); // not ended by a blank line yet: not whole
  for (const block of blocks) {
    let id: string | undefined;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) events.push({ id, event, data: data.join('\n') });
  }
  return events;
}

/** The bytes a stream sends for these pets' JSON texts, in order. */
export function eventsOf(petTexts: readonly string[]): string {
  return petTexts.map((text) => `id: ${/^\{"id":(\d+)/.exec(text)?.[1]}\nevent: pet\ndata: ${text}\n\n`).join('');
}
