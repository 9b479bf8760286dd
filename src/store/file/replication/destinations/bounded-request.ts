import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { ReplicationError } from './destination.js';

/** What one request to a destination may cost; a destination that would take more fails the round. */
export interface RequestLimits {
  /** Milliseconds a request may take in all, before the time its bytes earn (below); also its idle bound. */
  timeoutMs: number;
  /** Bytes a second each request is owed at least: a body of n bytes earns n / this seconds more. */
  minBytesPerSecond: number;
  /** The largest answer body read when the caller names no size; bigger is refused, not buffered. */
  maxBodyBytes: number;
}

export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  timeoutMs: 10_000,
  minBytesPerSecond: 1 << 20,
  maxBodyBytes: 64 << 20,
};

export interface Answer {
  status: number;
  body: Buffer;
}

type Send = (options: RequestOptions, answered: (res: IncomingMessage) => void) => ClientRequest;

/**
 * One request with a total deadline, not only an idle one: a server that answers and then trickles a
 * byte every few seconds, or sends without end, fails it ('timeout', 'damaged') instead of holding
 * the round and the stop behind it. The deadline grows with the bytes moved, at `minBytesPerSecond`,
 * so that a big object on a slow link still gets there; the body is dropped once past `maxBytes`.
 */
export function boundedRequest(
  send: Send,
  options: RequestOptions,
  body: Uint8Array | undefined,
  limits: RequestLimits,
  maxBytes: number,
  what: string,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const began = Date.now();
    let moved = body?.length ?? 0;
    let timer: NodeJS.Timeout | undefined;
    let failure: ReplicationError | undefined;
    const fail = (error: ReplicationError): void => {
      failure ??= error;
      req.destroy(error);
    };
    // Whichever of the request and the answer reports the end first, the failure that caused it is told.
    const failed = (error: Error & { code?: string }): void => {
      const told =
        error instanceof ReplicationError
          ? error
          : new ReplicationError('unreachable', `${what}: ${error.code ?? error.message}`);
      reject(failure ?? told);
    };
    const allowed = (): number => limits.timeoutMs + (moved * 1000) / limits.minBytesPerSecond;
    const check = (): void => {
      const left = allowed() - (Date.now() - began);
      if (left <= 0) fail(new ReplicationError('timeout', `${what} took longer than ${Math.round(allowed())} ms`));
      else timer = setTimeout(check, left);
    };
    const req = send({ ...options, timeout: limits.timeoutMs }, (res) => {
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > maxBytes) {
        const said = `${what} answered a body of ${declared} bytes, more than the ${maxBytes} expected`;
        fail(new ReplicationError('damaged', said));
        return;
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        moved += chunk.length;
        if (received <= maxBytes) chunks.push(chunk);
        else fail(new ReplicationError('damaged', `${what} answered more than the ${maxBytes} bytes expected`));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', failed);
    });
    timer = setTimeout(check, allowed());
    req.on('timeout', () => fail(new ReplicationError('timeout', `${what} was idle for ${limits.timeoutMs} ms`)));
    req.on('error', failed);
    req.on('close', () => {
      clearTimeout(timer);
      failed(new Error('the connection closed before the answer ended'));
    });
    req.end(body);
  });
}
