/**
 * A loopback webhook receiver (node:http) for the delivery tests: it records every request it
 * gets (headers, body, when) and answers each with the next of its scripted answers.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  /** When the client closed the request's connection (set later). */
  closedAt?: number;
}

/** An answer: a status, optional headers and body; `hang` never answers. */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Answers the next requests with these, in order; past them, 200. */
  script(answers: Answer[]): void;
  /** Resolves once `count` requests arrived, or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let answers: Answer[] = [];
  const hanging = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry: Received = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(entry);
      response.once('close', () => (entry.closedAt = Date.now()));
      const answer = answers.shift() ?? { status: 200 };
      if (answer === 'hang') {
        hanging.add(() => response.destroy());
        return;
      }
      response.writeHead(answer.status, answer.headers ?? {});
      response.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    script(next) {
      answers = [...next];
    },
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`The receiver got ${received.length} requests, not ${count}, within ${timeoutMs} ms.`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return received;
    },
    async close() {
      for (const end of hanging) end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `read` until `done` holds for its value (or fails after `timeoutMs`); answers that value. */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Not reached within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
