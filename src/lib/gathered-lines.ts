import { requestLine, writeRequestLine, type RequestLogEntry } from './request-log-line.js';
import type { SinkWrite } from './log-sink.js';

// Request lines are gathered and written together: at most REQUEST_LINE_DELAY_MS after the first,
// or once FLUSH_AT bytes wait. A write per request was a large share of a GET's CPU. Each line is
// encoded at once into one reused off-heap buffer, so no request leaves objects behind that live
// until the write: kept entries survived the young generation's collections and made V8 grow it,
// which cost more than formatting (figures in bench/results.md, "Why the code is shaped this way").
const FLUSH_AT = 64 * 1024;
const REQUEST_LINE_DELAY_MS = 10;
/** Room for FLUSH_AT and a long line after it. */
const WAITING_BYTES = 2 * FLUSH_AT;

/** The request lines waiting to be written, as UTF-8, and when they go. */
export class GatheredLines {
  readonly #write: SinkWrite;
  #waiting: Buffer | undefined;
  #used = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Writes what is gathered now (before `process.exit`, which would drop it). */
  readonly flush = (): void => this.writeOut('');

  constructor(write: SinkWrite) {
    this.#write = write;
  }

  /** Gathers the line of `entry`, stamped `time`. */
  add(time: string, entry: RequestLogEntry): void {
    this.#waiting ??= Buffer.allocUnsafeSlow(WAITING_BYTES);
    const end = writeRequestLine(this.#waiting, this.#used, time, entry);
    if (end !== -1) this.#used = end;
    else {
      const line = requestLine(time, entry);
      // A UTF-16 unit takes at most 3 bytes of UTF-8. A line too long to wait goes out at once,
      // after the waiting ones; one that might not fit where they end goes in after they are written.
      const most = 3 * line.length;
      if (most > WAITING_BYTES) return this.writeOut(line);
      if (this.#used + most > WAITING_BYTES) this.flush();
      this.#used += this.#waiting.write(line, this.#used);
    }
    if (this.#used >= FLUSH_AT) {
      this.flush();
    } else if (this.#timer === undefined) {
      // Not unref'd, so a process that ends on its own still writes its last lines; and one that
      // calls process.exit (an embedder after close, an uncaught exception) writes them on 'exit'.
      this.#timer = setTimeout(this.flush, REQUEST_LINE_DELAY_MS);
      process.once('exit', this.flush);
    }
  }

  /** Writes the waiting lines, and then `last`. */
  writeOut(last: string): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    process.off('exit', this.flush);
    // Taken before the write: a sink that logs from its write, or throws, must not get them twice.
    const used = this.#used;
    this.#used = 0;
    this.#write(this.#waiting ?? EMPTY, used, last);
  }
}

const EMPTY = Buffer.alloc(0);
