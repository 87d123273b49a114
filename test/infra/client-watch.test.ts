/**
 * The client watch (src/infra/client-watch.ts) over a real HTTP server and raw sockets: a
 * caller that half-closes its connection (FIN) while its response is still being written has
 * left, but the response is still written out in full and read: it was delivered.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { watchClient } from '../../src/infra/client-watch.js';

/** More than the kernel's socket buffers hold, so part of it waits in the process while the caller does not read. */
const BODY_BYTES = 24 * 1024 * 1024;

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the client watch', () => {
  it('does not call a response undelivered when its caller half-closed and then read it in full', async () => {
    let watched: (outcome: { undelivered: boolean; aborted: boolean; finished: boolean }) => void = () => undefined;
    const outcome = new Promise<{ undelivered: boolean; aborted: boolean; finished: boolean }>((resolve) => (watched = resolve));
    server = createServer((request, response) => {
      const client = watchClient(request, response);
      let undelivered = false;
      client.onUndelivered(() => (undelivered = true));
      response.once('close', () => watched({ undelivered, aborted: client.signal.aborted, finished: response.writableFinished }));
      response.end(Buffer.alloc(BODY_BYTES, 'x'));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await sleep(300);
    // FIN while much of the body still waits in the server process; then read everything.
    socket.end();
    await sleep(300);
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.resume();
    await new Promise((resolve) => socket.once('close', resolve));
    expect(received).toBeGreaterThan(BODY_BYTES);
    expect(await outcome).toEqual({ undelivered: false, aborted: true, finished: true });
  });
});
