/**
 * Plain HTTP sent to the HTTPS port (`curl http://…` against a TLS server): TLS alone would fail the
 * handshake and close without a word, which looks like a server that is down. As nginx does, the
 * request is answered with a 400 in plain HTTP that says the port speaks TLS. Node has no way to
 * write plain bytes once TLS holds the socket, so the first bytes are looked at before: a TLS
 * handshake record (0x16) goes on to TLS as it came, with those bytes handed back; what starts like
 * an HTTP request line gets the 400; anything else goes to TLS too, which refuses it as before.
 */
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';

const TLS_HANDSHAKE = 0x16;
// A method token and a space: `GET `, `POST `, `OPTIONS `…
const REQUEST_LINE = /^[A-Z]{3,10} /;
const BODY = JSON.stringify({
  code: 'invalid_request',
  message: 'this port speaks HTTPS (TLS): send the request with https://',
  status: 400,
});
const ANSWER =
  'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncache-control: no-store\r\nconnection: close\r\n' +
  `content-length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`;

/**
 * Puts the look at the first bytes in front of `server`'s TLS: a client that sends nothing within
 * `timeoutMs` is closed, as the TLS handshake timeout would; `onPlain` is told of each 400 given.
 */
export function answerPlainHttp(server: HttpsServer, timeoutMs: number, onPlain: (socket: Socket) => void): void {
  const [startTls] = server.listeners('connection') as Array<(socket: Socket) => void>;
  if (startTls === undefined) throw new TypeError('the HTTPS server has no TLS connection listener');
  server.removeListener('connection', startTls);
  server.prependListener('connection', (socket: Socket) => {
    // Until TLS takes the socket, its errors (a reset) are this module's to take.
    socket.on('error', ignore);
    socket.setTimeout(timeoutMs, () => socket.destroy());
    socket.once('data', (first: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      if (first[0] !== TLS_HANDSHAKE && REQUEST_LINE.test(first.subarray(0, 11).toString('latin1'))) {
        onPlain(socket);
        socket.end(ANSWER);
        return;
      }
      // TLS reads what was unshifted before anything more from the connection.
      socket.unshift(first);
      startTls.call(server, socket);
      process.nextTick(() => socket.resume());
    });
  });
}

function ignore(): void {}
