import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';

/**
 * A small Server-Sent Events client over node:http, for tests: it sees what is on the wire
 * (comments included), and closing it closes the connection, as a client that goes away would.
 */
export interface SseEvent {
  event: string;
  data: string;
  /** Its `id` line, if it had one. */
  id?: string;
  /** When it arrived (performance.now()). */
  at: number;
}

export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body, for a response that is not a stream (a refusal). */
  body: any;
  events: SseEvent[];
  /** Arrival times of comment lines (keep-alives). */
  comments: number[];
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /** The first `next` event (from `from` on) matching `predicate`, parsed; rejects after `timeoutMs`. */
  next(predicate?: (data: any) => boolean, timeoutMs?: number, from?: number): Promise<any>;
  close(): void;
}

export function openStream(
  url: string,
  options: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: unknown } = {},
): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = httpRequest(url, {
      method: options.method ?? 'POST',
      headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...options.headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: SseEvent[] = [];
      const comments: number[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      let text = '';
      const isStream = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
      let endedResolve!: () => void;
      const ended = new Promise<void>((r) => (endedResolve = r));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!isStream) return void (text += chunk);
        buffer += chunk;
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(performance.now());
            else if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('id:')) id = line.slice(3).replace(/^ /, '');
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (event !== 'message' || data.length)
            events.push({ event, data: data.join('\n'), at: performance.now(), ...(id !== undefined && { id }) });
        }
        for (const wake of waiters) wake();
      });
      const finish = () => {
        endedResolve();
        for (const wake of waiters) wake();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      let done = false;
      ended.then(() => (done = true));
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: undefined,
        events,
        comments,
        ended,
        next(predicate = () => true, timeoutMs = 5000, from = 0) {
          return new Promise((resolveNext, rejectNext) => {
            const check = () => {
              for (const e of events.slice(from)) {
                if (e.event !== 'next') continue;
                const data = JSON.parse(e.data);
                if (predicate(data)) {
                  cleanup();
                  return resolveNext(data);
                }
              }
              if (done) {
                cleanup();
                rejectNext(new Error(`stream ended without a matching event: ${JSON.stringify(events)}`));
              }
            };
            const timer = setTimeout(() => {
              cleanup();
              rejectNext(new Error(`no matching event within ${timeoutMs} ms: ${JSON.stringify(events)}`));
            }, timeoutMs);
            const cleanup = () => {
              clearTimeout(timer);
              waiters.delete(check);
            };
            waiters.add(check);
            check();
          });
        },
        close() {
          req.destroy();
        },
      };
      if (isStream) return resolve(stream);
      res.on('end', () => {
        try {
          stream.body = JSON.parse(text);
        } catch {
          stream.body = text;
        }
        resolve(stream);
      });
    });
    req.end(body);
  });
}

/**
 * A stream client that stops reading once the response's head has arrived (node:net, its socket
 * paused: the kernel's buffers fill and the server's writes back up), as a client that hangs or
 * a reader that never reads would. `closed` resolves when the server has closed the connection
 * (seen once the client reads again: `resume`).
 */
export interface StalledStream {
  status: number;
  socket: Socket;
  /** Reads again, so the end of the connection (if the server closed it) is seen. */
  resume(): void;
  closed: Promise<void>;
}

export function openStalledStream(url: string, options: { headers: Record<string, string>; body: unknown }): Promise<StalledStream> {
  const { hostname, port, pathname } = new URL(url);
  const body = JSON.stringify(options.body);
  const headers = {
    host: `${hostname}:${port}`,
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      resolve({ status: Number(head.split(' ')[1]), socket, closed, resume: () => void socket.resume().on('data', () => undefined) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.on('error', () => undefined);
    socket.write(
      `POST ${pathname} HTTP/1.1\r\n${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n${body}`,
    );
  });
}
