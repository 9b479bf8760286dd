import type { Socket } from 'node:net';

/**
 * Ends a connection the server gives up on while requests it parsed are still unanswered. Node's
 * close destroys each of them with an ECONNRESET error whose stack it captures and formats; nobody
 * hears of those errors (their client is the one cut), and for a flood of pipelined requests they
 * were most of the server's time (bench/results.md, "Answers nobody reads"). So the stacks of the
 * errors made during Node's own 'close' listener are left empty, and the limit put back right after.
 */
export function endUnheard(socket: Socket): void {
  let limit = Error.stackTraceLimit;
  socket.prependOnceListener('close', () => {
    limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
  });
  socket.once('close', () => {
    Error.stackTraceLimit = limit;
  });
  socket.destroy();
}
