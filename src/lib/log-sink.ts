import { Writable } from 'node:stream';

/** Where a logger writes its lines: stdout, stderr, or anything with a `write` of text. */
export interface Sink {
  write(text: string): unknown;
}

/** Writes `bytes[0, length)` (UTF-8 lines) and then `last` (text); either may be empty. */
export type SinkWrite = (bytes: Buffer, length: number, last: string) => void;

/**
 * How lines gathered as bytes reach `out`. A stream (stdout) is handed them as the bytes they are,
 * copied: decoding them to a string, for the stream to encode it back, cost more (bench/results.md).
 * A sink of text gets the lines and `last` in one write. Either way the bytes are taken before the
 * write, so a caller may reuse its buffer as soon as this returns, or while a stream writes.
 */
export function sinkWrite(out: Sink): SinkWrite {
  if (out instanceof Writable && !out.writableObjectMode) {
    const stream = out;
    return (bytes, length, last) => {
      if (length > 0) stream.write(Buffer.from(bytes.subarray(0, length)));
      if (last !== '') stream.write(last);
    };
  }
  return (bytes, length, last) => {
    const text = length === 0 ? last : bytes.toString('utf8', 0, length) + last;
    if (text !== '') out.write(text);
  };
}
