import type { IncomingMessage, ServerResponse } from 'node:http';
import { headerCount } from './headers.js';
import { HttpError } from './http-error.js';
import { parseJson, type JsonValue } from '../lib/json.js';
import { errorCode } from '../lib/system-error.js';
import { ValidationError } from '../pet/validate.js';

const MEDIA_TYPE = /^application\/json[ \t]*(;.*)?$/i;
const MAX_DEPTH = 16;

/**
 * Reads a JSON request body, refusing early what can be refused early: a wrong Content-Type (415)
 * and a declared length over the limit (413) are answered before a `100 Continue` is sent, and a body
 * that grows past the limit while streaming is a 413 without buffering the rest.
 */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<JsonValue> {
  // Node keeps only the first Content-Type: two are ambiguous, so the request is refused.
  if (headerCount(req, 'content-type') > 1) throw new ValidationError('the Content-Type header is given more than once');
  // Node's parser accepts codings before a final `chunked` and ignores them; this service decodes none.
  const transfer = req.headers['transfer-encoding'];
  if (transfer !== undefined && transfer.split(',').some((coding) => coding.trim().toLowerCase() !== 'chunked')) {
    throw new HttpError(415, 'unsupported_media_type', `Transfer-Encoding ${transfer} is not supported; send the body with chunked alone`);
  }
  const type = req.headers['content-type'];
  if (type === undefined || !MEDIA_TYPE.test(type)) {
    throw new HttpError(415, 'unsupported_media_type', 'the request body must be application/json');
  }
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new HttpError(415, 'unsupported_media_type', `Content-Encoding ${encoding} is not supported; send the body uncompressed`);
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge(limit);
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();

  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) throw tooLarge(limit);
      chunks.push(chunk);
    }
  } catch (error) {
    // The client went away mid-body: its fault, not the server's; nobody is left to read the answer.
    if (errorCode(error) === 'ECONNRESET') throw new ValidationError('the request body was not received completely');
    throw error;
  }
  if (size === 0) throw new ValidationError('a request body (NewPet) is required');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks, size));
  } catch (error) {
    if (error instanceof TypeError) throw new ValidationError('the request body is not valid UTF-8');
    throw error;
  }
  return parseJson(text, { maxDepth: MAX_DEPTH });
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

function tooLarge(limit: number): HttpError {
  // The rest of the body is not read: the connection closes after the answer (app.ts, bodyToCome).
  return new HttpError(413, 'payload_too_large', `the request body must be at most ${limit} bytes`);
}
