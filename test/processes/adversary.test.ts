/**
 * An attacker with ordinary keys against the bundle run exactly as `npm start` runs it (heap caps
 * included): documents built to exhaust memory, many distinct documents, bodies that never
 * finish, and requests pipelined on one connection behind a response that is never read. Each
 * attack must get a 4xx (or exactly what it paid for) while the same process goes on serving everyone else.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graphql, json, pool, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';
import { aliasedIntrospection, distinctFeedDocument } from '../support/attack-documents.js';
import { parseResponses, pipeline, WIRE_SLOW_RESPONSE, wireRequest, wireTrace } from '../support/pipelining.js';

const { databaseUrl, redisUrl } = requireRealBackends();
const BODY_TIMEOUT_MS = 1500;
const MAX_IN_FLIGHT = 3;
let service: ServiceProcess;
let readKey: string;
let skipTraceKey: string;

const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${service.child.pid}/status`, 'utf8'))![1]) / 1024;
const counts = () =>
  json(`${service.url}/api/v1/call`, { bearer: readKey, body: JSON.stringify({ operationId: 'getNotificationCounts' }) });
const ADDRESS = { line1: '77 Sunset Strip', city: 'Austin', state: 'TX', zip: '78701' };

/** Median latency of `n` sequential gateway calls, all of which must succeed. */
async function gatewayLatencyMs(n = 20): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    expect((await counts()).status).toBe(200);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(n / 2)];
}

beforeAll(async () => {
  service = await spawnService({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REQUEST_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
    SKIPTRACE_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
    GATEWAY_RATE_LIMIT_PER_MIN: '100000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '100000',
    AUTH_FAILURE_LIMIT_PER_MIN: '100000',
  });
  const org = (
    await graphql(
      service,
      `
        mutation ($n: String!) {
          createOrganization(name: $n) {
            id
          }
        }
      `,
      { n: `Adversary ${randomUUID()}` },
    )
  ).body.data.createOrganization.id;
  const user = (
    await graphql(
      service,
      `
        mutation ($o: ID!, $e: String!) {
          createUser(organizationId: $o, email: $e) {
            id
          }
        }
      `,
      { o: org, e: `${randomUUID()}@example.com` },
    )
  ).body.data.createUser.id;
  readKey = (
    await graphql(
      service,
      `
        mutation ($u: ID!) {
          createApiKey(userId: $u, scopes: [READ]) {
            secret
          }
        }
      `,
      { u: user },
    )
  ).body.data.createApiKey.secret;
  skipTraceKey = (
    await graphql(
      service,
      `
        mutation ($o: ID!) {
          generateSkipTraceKey(organizationId: $o) {
            secret
          }
        }
      `,
      { o: org },
    )
  ).body.data.generateSkipTraceKey.secret;
  await graphql(
    service,
    `
      mutation ($o: ID!, $r: String!) {
        addSkipTraceCredits(organizationId: $o, amount: 100, reference: $r) {
          id
        }
      }
    `,
    { o: org, r: randomUUID() },
  );
  const imported = await graphql(
    service,
    `
      mutation ($i: [PropertyRecordInput!]!) {
        importPropertyRecords(input: $i) {
          imported
        }
      }
    `,
    {
      i: [{ address: ADDRESS, owners: [{ type: 'person', firstName: 'Ada', lastName: 'Stone' }] }],
    },
  );
  expect(imported.body.data.importPropertyRecords.imported).toBe(1);
}, 120_000);

afterAll(async () => {
  await service?.stop();
});

describe('a READ-only key cannot exhaust the heap through /graphql', () => {
  it('refuses aliased introspection with fragment fan-out with a 4xx, and the process keeps its usual speed', async () => {
    const before = await gatewayLatencyMs();
    for (const aliases of [5, 15]) {
      const results = await pool(20, 4, () =>
        json(`${service.url}/graphql`, { bearer: readKey, body: JSON.stringify({ query: aliasedIntrospection(aliases) }) }),
      );
      for (const result of results) {
        expect(result.status, JSON.stringify(result.body).slice(0, 300)).toBe(400);
        expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      }
    }
    expect(service.child.exitCode).toBeNull();
    // GraphiQL's own introspection still works, for the same key.
    const introspection = await json(`${service.url}/graphql`, {
      bearer: readKey,
      body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) }),
    });
    expect(introspection.status).toBe(200);
    expect(introspection.body.data.__schema.types.length).toBeGreaterThan(20);
    const after = await gatewayLatencyMs();
    console.log(
      `gateway median latency before the attack ${before.toFixed(1)} ms, after ${after.toFixed(1)} ms; RSS ${rssMiB().toFixed(0)} MiB`,
    );
    expect(after).toBeLessThan(Math.max(3 * before, before + 25));
  });

  it('keeps RSS bounded under many distinct, individually legal documents', async () => {
    const baseline = rssMiB();
    const DOCUMENTS = 400;
    // Each document twice: the second request of a document is the one that compiles it, when it is
    // small enough (7 aliased pages are; 15 are not).
    for (const aliases of [15, 7]) {
      const results = await pool(2 * DOCUMENTS, 4, (i) =>
        json(`${service.url}/graphql`, { bearer: readKey, body: JSON.stringify({ query: distinctFeedDocument(i >> 1, aliases) }) }),
      );
      expect(results.filter((r) => r.status !== 200)).toEqual([]);
      console.log(
        `${DOCUMENTS} distinct ${aliases}-alias documents, each sent twice: RSS ${baseline.toFixed(0)} → ${rssMiB().toFixed(0)} MiB`,
      );
    }
    const grown = rssMiB() - baseline;
    // Each compiled document once kept ~1.7 MB alive: 400 of them would be ~680 MB and a dead process.
    // Now what stays is bounded by the caches; the rest is garbage the heap caps make V8 collect.
    expect(grown).toBeLessThan(128);
    expect(service.child.exitCode).toBeNull();
    expect((await counts()).status).toBe(200);
  });
});

/** Opens a raw connection and sends `head`; resolves with everything the server wrote until it closed. */
function rawConnection(head: string): { socket: Socket; response: Promise<{ text: string; closedAfterMs: number }> } {
  const started = performance.now();
  const socket = connect(Number(new URL(service.url).port), '127.0.0.1');
  socket.write(head);
  const response = new Promise<{ text: string; closedAfterMs: number }>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += String(chunk)));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ text, closedAfterMs: performance.now() - started }));
  });
  return { socket, response };
}

describe('bodies that never finish, and idle connections', () => {
  it(`ends a trickled body with 408 request_timeout after REQUEST_BODY_TIMEOUT_MS, freeing the in-flight slots it held`, async () => {
    const body = JSON.stringify({ address: ADDRESS });
    const head = `POST /api/v1/skiptrace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${skipTraceKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    // More tricklers than the key has slots: one byte every 300 ms, for ever.
    const tricklers = Array.from({ length: MAX_IN_FLIGHT + 2 }, () => rawConnection(head));
    const timers = tricklers.map(({ socket }) => {
      let sent = 0;
      return setInterval(() => socket.writable && socket.write(body[sent++ % body.length]), 300);
    });
    try {
      // While they hold the slots, the key is at its limit.
      await new Promise((resolve) => setTimeout(resolve, 400));
      const refused = await json(`${service.url}/api/v1/skiptrace`, { bearer: skipTraceKey, body });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('concurrency_limit');
      expect(refused.headers.get('retry-after')).toBe('1');

      const responses = await Promise.all(tricklers.map((t) => t.response));
      for (const { text, closedAfterMs } of responses) {
        const slotHolder = /^HTTP\/1\.1 408/.test(text);
        const refusedAtOnce = /^HTTP\/1\.1 429/.test(text);
        expect(slotHolder || refusedAtOnce, text.slice(0, 200)).toBe(true);
        if (slotHolder) {
          expect(text).toMatch(/"code":"request_timeout"/);
          expect(text).toMatch(/X-Request-Id: \S+/i);
          expect(closedAfterMs).toBeLessThan(BODY_TIMEOUT_MS + 1500);
        }
      }
    } finally {
      timers.forEach(clearInterval);
    }
    // The slots came back: the key traces again.
    const trace = await json(`${service.url}/api/v1/skiptrace`, { bearer: skipTraceKey, body: JSON.stringify({ address: ADDRESS }) });
    expect(trace.status).toBe(200);
  });

  it('closes connections that never send a request, so they cannot pile up', async () => {
    const idle = Array.from({ length: 50 }, () => rawConnection(''));
    const closed = await Promise.all(idle.map((c) => c.response));
    for (const { closedAfterMs } of closed) expect(closedAfterMs).toBeLessThan(BODY_TIMEOUT_MS + 1500);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });
});

describe('requests pipelined on one connection', () => {
  const account = async () =>
    (await json(`${service.url}/api/v1/skiptrace/account`, { method: 'GET', bearer: skipTraceKey })).body.credits as number;
  const keyedTrace = (key: string) =>
    json(`${service.url}/api/v1/skiptrace`, {
      bearer: skipTraceKey,
      body: JSON.stringify({ address: ADDRESS }),
      headers: { 'idempotency-key': key },
    });
  // Built once the keys exist (beforeAll).
  const wireCounts = () =>
    wireRequest(
      'POST',
      '/api/v1/call',
      { Authorization: `Bearer ${readKey}`, 'Content-Type': 'application/json' },
      '{"operationId":"getNotificationCounts"}',
    );
  const wireAccount = () => wireRequest('GET', '/api/v1/skiptrace/account', { Authorization: `Bearer ${skipTraceKey}` });

  it('charges a trace queued behind a response never read once: final when a replay delivered it, refunded when nothing did; no 5xx', async () => {
    const before = await account();
    // Each stuck trace holds one of the key's in-flight slots until its connection closes: one is left for the replays.
    const keys = Array.from({ length: MAX_IN_FLIGHT - 1 }, () => randomUUID());
    // Each connection: a response too large to finish unread, a gateway call, a keyed trace, an account read.
    const stuck = keys.map((key) =>
      pipeline(
        service.url,
        [WIRE_SLOW_RESPONSE, wireCounts(), wireTrace(skipTraceKey, { address: ADDRESS }, { 'Idempotency-Key': key }), wireAccount()],
        {
          read: false,
        },
      ),
    );
    await expect.poll(account, { timeout: 10_000 }).toBe(before - keys.length);
    // The first keys are replayed on other connections, which read their answers; the last is not.
    const replays = [];
    for (const key of keys.slice(0, -1)) replays.push(await keyedTrace(key));
    for (const replay of replays) expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    stuck.forEach(({ socket }) => socket.destroy());
    await Promise.all(stuck.map(({ closed }) => closed));

    await expect.poll(account, { timeout: 5000 }).toBe(before - replays.length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await account()).toBe(before - replays.length);
    // The replayed keys still replay; the refunded one runs anew and is charged.
    const again = await keyedTrace(keys[0]);
    expect([again.status, again.body.id, again.headers.get('idempotent-replayed')]).toEqual([200, replays[0].body.id, 'true']);
    const anew = await keyedTrace(keys.at(-1)!);
    expect([anew.status, anew.headers.get('idempotent-replayed')]).toEqual([200, null]);
    expect(await account()).toBe(before - keys.length);

    // The same mix read in full: every answer arrives, in order, none a 5xx, the trace charged once.
    const read = pipeline(
      service.url,
      [
        wireCounts(),
        wireTrace(skipTraceKey, { address: ADDRESS }),
        wireAccount(),
        wireCounts(),
        wireRequest('GET', '/healthz', { Connection: 'close' }),
      ],
      {
        read: true,
      },
    );
    const answers = parseResponses(await read.closed);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await account()).toBe(before - keys.length - 1);
    expect(service.child.exitCode).toBeNull();
    expect((await counts()).status).toBe(200);
  });
});
