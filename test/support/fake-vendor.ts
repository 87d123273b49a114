/**
 * A fake skip-trace vendor: a real HTTP server on loopback speaking the vendor's shape that
 * `src/skip-trace/providers/http-provider.ts` describes.
 * Point the service at it with `SKIPTRACE_PROVIDER=http`, `SKIPTRACE_PROVIDER_URL=vendor.url`,
 * `SKIPTRACE_PROVIDER_KEY=vendor.apiKey`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeVendorMode =
  /** matched, FAKE_VENDOR_PERSONS */
  | 'ok'
  /** as 'ok', answered after `setDelay(ms)` */
  | 'slow'
  /** HTTP 500 with FAKE_VENDOR_FAILURE_MESSAGE in the body */
  | 'failing'
  /** HTTP 200 with a body that is not JSON */
  | 'garbage'
  /** matched: false, error: false */
  | 'unmatched'
  /** error: true, errorCode: address_not_found */
  | 'unresolvable'
  /** a result under a different requestId only */
  | 'wrong-request-id'
  /** a result for another requestId first, then ours */
  | 'reordered'
  /** whatever the responder given to `respondWith` returns */
  | 'custom'
  /** one entry per request, from the responder given to `respondEach` */
  | 'each';

export interface FakeVendorCall {
  /** The parsed JSON body (the raw text when it does not parse). */
  body: any;
  authorization: string | undefined;
  path: string;
}

export interface FakeVendorReply {
  status: number;
  /** Sent as JSON unless it is a string. */
  body: unknown;
}

/** Builds the reply to a request for 'custom' mode; `requestId` is the first request's. */
export type FakeVendorResponder = (requestId: string, body: any) => FakeVendorReply;

/**
 * Answers one entry of a call's `requests` for 'each' mode: its data entry (none: the answer lacks
 * its requestId) and how long it takes; the call is answered once its slowest entry is ready.
 */
export type FakeVendorEntryResponder = (request: any) => { entry?: unknown; delayMs?: number };

export interface FakeVendor {
  /** Base URL, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  apiKey: string;
  /** Every request received, in order, including unauthorized ones. */
  calls: FakeVendorCall[];
  setMode(mode: FakeVendorMode): void;
  /** Delay of 'slow' mode in ms (default 200). */
  setDelay(ms: number): void;
  /** Switches to 'custom' mode with this responder. */
  respondWith(responder: FakeVendorResponder): void;
  /** Switches to 'each' mode: every request of a call answered by this responder, in one reply. */
  respondEach(responder: FakeVendorEntryResponder): void;
  /** Mode 'ok', default delay, no calls recorded. */
  reset(): void;
  close(): Promise<void>;
}

/** The service's settings for the http provider pointed at `vendor`. */
export const vendorEnv = (vendor: FakeVendor) => ({
  SKIPTRACE_PROVIDER: 'http',
  SKIPTRACE_PROVIDER_URL: vendor.url,
  SKIPTRACE_PROVIDER_KEY: vendor.apiKey,
});

/** What a failing vendor says; it must reach the logs only, never a caller. */
export const FAKE_VENDOR_FAILURE_MESSAGE = 'vendor internal: shard db-7 unavailable (trace 9f2c)';

/** The persons of 'ok' and 'slow' mode, as the vendor sends them. */
export const FAKE_VENDOR_PERSONS = [
  {
    name: { first: 'John', middle: 'Q', last: 'Smith' },
    age: 61,
    phones: [
      { number: '(512) 555-0100', type: 'Mobile' },
      { number: '1-512-555-0101', type: 'Land Line' },
      { number: '512.555.0102', type: 'VoIP' },
    ],
    emails: [{ email: 'john@example.com' }, { email: 'jqsmith@example.net' }],
  },
  {
    // No middle name, no age.
    name: { first: 'Mary', last: 'Smith' },
    phones: [
      { number: '+1 (512) 555-0103', type: 'Landline' },
      { number: '5125550104', type: 'Residential' },
    ],
    emails: [{ email: 'mary@example.com' }],
  },
];

/** A 200 vendor body holding the given data entries. */
export function vendorBody(data: unknown[]): unknown {
  return { status: { code: 200, text: 'OK' }, result: { data } };
}

/** One data entry of a vendor body. */
export function vendorEntry(
  requestId: string,
  persons: unknown[],
  meta: Record<string, unknown> = { matched: persons.length > 0, error: false },
): unknown {
  return { input: { requestId }, persons, meta };
}

export async function startFakeVendor(options: { apiKey?: string } = {}): Promise<FakeVendor> {
  const apiKey = options.apiKey ?? `vk_${randomBytes(16).toString('hex')}`;
  const calls: FakeVendorCall[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let mode: FakeVendorMode = 'ok';
  let delayMs = 200;
  let responder: FakeVendorResponder | null = null;
  let entryResponder: FakeVendorEntryResponder | null = null;

  // A call may hold many requests (a batch's or a job's grouped traces): each gets its own entry.
  const each = (body: any, entry: (requestId: string) => unknown) =>
    vendorBody((body.requests as Array<{ requestId: string }>).map((request) => entry(request.requestId)));

  const reply = (requestId: string, body: any): FakeVendorReply => {
    switch (mode) {
      case 'ok':
      case 'slow':
        return { status: 200, body: each(body, (id) => vendorEntry(id, FAKE_VENDOR_PERSONS)) };
      case 'failing':
        return { status: 500, body: { status: { code: 500, text: 'Internal Server Error' }, message: FAKE_VENDOR_FAILURE_MESSAGE } };
      case 'garbage':
        return { status: 200, body: '<html>502 Bad Gateway</html>' };
      case 'unmatched':
        return { status: 200, body: each(body, (id) => vendorEntry(id, [], { matched: false, error: false })) };
      case 'unresolvable':
        return {
          status: 200,
          body: each(body, (id) => vendorEntry(id, [], { matched: false, error: true, errorCode: 'address_not_found' })),
        };
      case 'wrong-request-id':
        return { status: 200, body: vendorBody([vendorEntry(randomUUID(), FAKE_VENDOR_PERSONS)]) };
      case 'reordered':
        return {
          status: 200,
          body: vendorBody([
            vendorEntry(randomUUID(), [{ name: { first: 'Someone', last: 'Else' }, age: 30 }]),
            vendorEntry(requestId, FAKE_VENDOR_PERSONS),
          ]),
        };
      case 'custom':
        if (responder === null) throw new Error('custom mode without a responder');
        return responder(requestId, body);
      case 'each':
        throw new Error('each mode is answered by answerEach');
    }
  };

  const answerEach = (res: ServerResponse, body: any): void => {
    const answers = (body.requests as unknown[]).map((request) => entryResponder!(request));
    const data = answers.flatMap((answer) => (answer.entry === undefined ? [] : [answer.entry]));
    const delay = Math.max(0, ...answers.map((answer) => answer.delayMs ?? 0));
    const timer = setTimeout(() => {
      timers.delete(timer);
      send(res, { status: 200, body: vendorBody(data) });
    }, delay);
    timers.add(timer);
  };

  const send = (res: ServerResponse, { status, body }: FakeVendorReply): void => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': typeof body === 'string' ? 'text/html' : 'application/json' });
    res.end(text);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      // keep the raw text
    }
    calls.push({ body, authorization: req.headers.authorization, path: req.url ?? '' });

    if (req.method !== 'POST' || req.url !== '/property/skip-trace') return send(res, { status: 404, body: { message: 'not found' } });
    if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, { status: 401, body: { message: 'invalid api key' } });
    const requestId = body?.requests?.[0]?.requestId;
    if (typeof requestId !== 'string') return send(res, { status: 400, body: { message: 'requests[0].requestId required' } });

    if (mode === 'each') return answerEach(res, body);
    const answer = reply(requestId, body);
    if (mode !== 'slow') return send(res, answer);
    const timer = setTimeout(() => {
      timers.delete(timer);
      send(res, answer);
    }, delayMs);
    timers.add(timer);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => send(res, { status: 500, body: { message: String(err) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    calls,
    setMode: (m) => {
      mode = m;
    },
    setDelay: (ms) => {
      delayMs = ms;
    },
    respondWith: (r) => {
      responder = r;
      mode = 'custom';
    },
    respondEach: (r) => {
      entryResponder = r;
      mode = 'each';
    },
    reset: () => {
      mode = 'ok';
      delayMs = 200;
      responder = null;
      entryResponder = null;
      calls.length = 0;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
