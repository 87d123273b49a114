/**
 * HTTP/1.1 pipelining over a raw socket: several requests written on one connection at once, the
 * answers read back in order (or never read). fetch cannot do this: it sends one request per
 * connection at a time.
 */
import { connect, type Socket } from 'node:net';

/** An HTTP/1.1 request as it goes on the wire; a body is sent with its Content-Length. */
export function wireRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: localhost', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}

/** A skip trace request on the wire, with a skip trace key and optional extra headers. */
export const wireTrace = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  wireRequest(
    'POST',
    '/api/v1/skiptrace',
    { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
    typeof body === 'string' ? body : JSON.stringify(body),
  );

/** Bytes of a response too large for the kernel's buffers, so it never finishes on a connection that is not read. */
export const WIRE_SLOW_RESPONSE = wireRequest('GET', '/docs/scalar.js');

export interface WireResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface Pipeline {
  socket: Socket;
  /** Every byte the server wrote, once the connection has closed. */
  closed: Promise<Buffer>;
}

/**
 * Opens a connection to `baseUrl` and writes `requests` in one write. With `read: false` the client
 * never reads: once the kernel's buffers are full, the server cannot finish the response it is
 * writing, and every later answer on the connection waits behind it.
 */
export function pipeline(baseUrl: string, requests: string[], options: { read: boolean }): Pipeline {
  const socket = connect(Number(new URL(baseUrl).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('error', () => undefined);
  if (options.read) socket.on('data', (chunk) => chunks.push(chunk));
  else socket.pause();
  socket.write(requests.join(''));
  const closed = new Promise<Buffer>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks))));
  return { socket, closed };
}

/**
 * The complete responses in `bytes`, in order (Content-Length or chunked framing); a response cut
 * off by the connection's end is left out.
 */
export function parseResponses(bytes: Buffer): WireResponse[] {
  const responses: WireResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return responses;
    const [statusLine, ...lines] = bytes.subarray(at, headEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const framed = headers['transfer-encoding'] === 'chunked' ? dechunk(bytes, headEnd + 4) : lengthFramed(bytes, headEnd + 4, headers);
    if (!framed) return responses;
    responses.push({ status: Number(statusLine.split(' ')[1]), headers, body: framed.body.toString('utf8') });
    at = framed.end;
  }
}

function lengthFramed(bytes: Buffer, start: number, headers: Record<string, string>) {
  const end = start + Number(headers['content-length'] ?? 0);
  return end <= bytes.length ? { body: bytes.subarray(start, end), end } : null;
}

function dechunk(bytes: Buffer, start: number) {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size) || lineEnd + 2 + size + 2 > bytes.length) return null;
    if (size === 0) return { body: Buffer.concat(parts), end: lineEnd + 4 };
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
