import type { IncomingMessage, ServerResponse } from 'node:http';
import { headerCount } from './pipeline/headers.js';
import { HttpError } from './http-error.js';
import { parseJson, type JsonValue } from '../lib/json.js';
import { errorCode } from '../lib/system-error.js';
import { ValidationError } from '../pet/validate.js';

const MEDIA_TYPE = /^application\/json[ \t]*(;.*)?$/i;
const MAX_DEPTH = 16;
// Stateless without `stream: true`, so one decoder serves every request.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Reads a JSON request body, refusing early what can be refused early: a wrong Content-Type (415)
 * and a declared length over the limit (413) are answered before a `100 Continue` is sent, and a body
 * that grows past the limit while streaming is a 413 without buffering the rest.
 */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<JsonValue> {
  // Node keeps only the first Content-Type: two are ambiguous, so the request is refused.
  if (headerCount(req, 'content-type') > 1)
    throw new ValidationError('the Content-Type header is given more than once');
  // Node's parser accepts codings before a final `chunked` and ignores them; this service decodes none.
  const transfer = req.headers['transfer-encoding'];
  if (transfer?.split(',').some((coding) => coding.trim().toLowerCase() !== 'chunked')) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `Transfer-Encoding ${transfer} is not supported; send the body with chunked alone`,
    );
  }
  const type = req.headers['content-type'];
  if (type === undefined || !MEDIA_TYPE.test(type)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `the request body must be application/json; got ${receivedType(type)}`,
    );
  }
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `Content-Encoding ${encoding} is not supported; send the body uncompressed`,
    );
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();

  const body = await receive(req, limit);
  if (body.length === 0) throw new ValidationError('a request body (NewPet) is required');
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch (error) {
    if (error instanceof TypeError) throw new ValidationError('the request body is not valid UTF-8');
    throw error;
  }
  return parseJson(text, { maxDepth: MAX_DEPTH });
}

/**
 * The request's body, read with listeners of its own: `for await` over the request made an async
 * iterator, its promises and end-of-stream listeners for every create, a fifth of the JavaScript of
 * a POST (issue 34). Past `limit` it stops reading, the rest left unread (the answer closes the
 * connection); a client gone mid-body is a 400, not a server fault.
 */
function receive(req: IncomingMessage, limit: number): Promise<Buffer> {
  // An embedder may call the handler late (after an asynchronous check of its own): a request read
  // to its end already has no body left, one closed has none coming; neither will tell us again.
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  if (req.destroyed) return Promise.reject(incomplete());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // The listeners stay (the request is done with after this): once settled, what follows changes nothing.
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    req.on('data', (data: Buffer | string): void => {
      if (settled) return;
      // Strings if an embedder set an encoding on the request before handing it on: made bytes again.
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // The rest stays unread, and the answer closes the connection: the request may be complete
      // already (all of it came in one read), with its socket's reading paused for what it holds.
      req.pause();
      fail(tooLarge(limit, { connection: 'close' }));
    });
    req.on('end', (): void => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    });
    req.on('error', (error: Error): void => fail(errorCode(error) === 'ECONNRESET' ? incomplete() : error));
    // Closed before its end without an error: the client went away as well. (A request closes after
    // its end too: no error is made then, which would cost its stack trace.)
    req.on('close', (): void => {
      if (!settled) fail(incomplete());
    });
  });
}

function incomplete(): ValidationError {
  return new ValidationError('the request body was not received completely');
}

/**
 * Whether some of the request's body may still be on its way: it declares one and has not been read
 * to its end. Node hands a request over before parsing what follows its headers, so a body that came
 * in the same packet counts too.
 */
export function bodyToCome(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

function tooLarge(limit: number, headers?: Record<string, string>): HttpError {
  // The rest of the body is not read: the connection closes after the answer (app.ts, bodyToCome, or `headers`).
  return new HttpError(413, 'payload_too_large', `the request body must be at most ${limit} bytes`, headers);
}

/** The media type a client sent, without its parameters, cut short: a 415 names what it got. */
function receivedType(type: string | undefined): string {
  if (type === undefined) return 'no Content-Type';
  const media = type.split(';')[0]?.trim() ?? '';
  if (media === '') return 'an empty Content-Type';
  return media.length > 64 ? `${media.slice(0, 64)}…` : media;
}
