/**
 * What an attacker with ordinary keys tried against the running service, each as a behaviour the
 * service must keep: no charge without a delivered trace, no key locked out by its own aborted
 * requests, every route rate-limited, one credential per request, JSON bodies only, no CORS, and
 * the contract's error shape for URLs the router cannot read. (The memory and body-timeout
 * attacks run against the bundle in test/processes/adversary.test.ts.)
 */
import { randomInt, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../support/harness.js';

const ADDRESS = { line1: '12 Harbor Lane', city: 'Austin', state: 'TX', zip: '78701' };
const TRACE = `mutation($input: SkipTraceInput!) { skipTrace(input: $input) { id status } }`;

const logLines: string[] = [];
let service: TestService;
beforeAll(async () => {
  service = await startService(
    { LOG_LEVEL: process.env.DEBUG_LOG ? 'error' : 'info', SKIPTRACE_MAX_IN_FLIGHT: '3' },
    {
      logDestination: new Writable({
        write: (chunk, _encoding, done) => (logLines.push(String(chunk)), process.env.DEBUG_LOG && process.stderr.write(chunk), done()),
      }),
    },
  );
  const imported = await service.graphql(`mutation($i: [PropertyRecordInput!]!) { importPropertyRecords(input: $i) { imported } }`, {
    i: [{ address: ADDRESS, owners: [{ type: 'person', firstName: 'Ada', lastName: 'Stone' }] }],
  });
  expect(imported.body.data.importPropertyRecords.imported).toBe(1);
});
afterAll(() => service?.close());

/** An organization with a skip trace key and `credits` credits. */
async function skipTraceOrganization(credits: number) {
  const { organizationId } = await service.provision();
  const key = (await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId }))
    .body.data.generateSkipTraceKey.secret as string;
  await service.graphql(
    `mutation($o: ID!, $a: Int!, $r: String!) { addSkipTraceCredits(organizationId: $o, amount: $a, reference: $r) { id } }`,
    { o: organizationId, a: credits, r: randomUUID() },
  );
  return { organizationId, key };
}

async function ledger(organizationId: string) {
  const [org] = await service.sql<{ credits: number }>(`select skip_trace_credits as credits from organizations where id = ?`, [
    organizationId,
  ]);
  const [charges] = await service.sql<{ n: number }>(
    `select count(*)::int as n from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
    [organizationId],
  );
  const [charged] = await service.sql<{ n: number }>(
    `select count(*)::int as n from skip_trace_requests where organization_id = ? and charged`,
    [organizationId],
  );
  return { credits: org.credits, charges: charges.n, chargedRequests: charged.n };
}

const restTrace = (key: string, body: unknown = { address: ADDRESS }) =>
  service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

/** Sends raw bytes and returns what came back before the server closed the connection. */
function raw(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (chunk) => (text += String(chunk)));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
}

describe('a trace is charged only when its result is delivered', () => {
  it('refuses, before anything runs, a /graphql mutation that selects skipTrace more than once or beside another field', async () => {
    const { organizationId, key } = await skipTraceOrganization(10);
    const unresolvable = { line1: '1 Nowhere Road', city: 'Austin', state: 'TX', zip: '78701' };
    const documents = [
      // Two traces that would succeed, then one that fails: the non-null field would null out `data`.
      `mutation($a: SkipTraceInput!, $b: SkipTraceInput!, $c: SkipTraceInput!) { a: skipTrace(input: $a) { id } b: skipTrace(input: $b) { id } c: skipTrace(input: $c) { id } }`,
      `mutation($a: SkipTraceInput!) { skipTrace(input: $a) { id } generateSkipTraceKey(organizationId: "${organizationId}") { id } }`,
      `mutation($a: SkipTraceInput!, $b: SkipTraceInput!) { ...T b: skipTrace(input: $b) { id } } fragment T on Mutation { skipTrace(input: $a) { id } }`,
      `mutation($a: SkipTraceInput!, $b: SkipTraceInput!) { skipTrace(input: $a) { id } ... on Mutation { again: skipTrace(input: $b) { id } } }`,
    ];
    for (const query of documents) {
      const variables = { a: { address: ADDRESS }, b: { address: ADDRESS }, c: { address: unresolvable } };
      const result = await service.graphql(query, variables, key);
      expect(result.body.data ?? null, query).toBeNull();
      expect(result.body.errors[0].extensions.code, query).toBe('BAD_USER_INPUT');
      expect(result.body.errors[0].message).toMatch(/only field/);
    }
    expect(await ledger(organizationId)).toEqual({ credits: 10, charges: 0, chargedRequests: 0 });
    // One trace, with __typename beside it, is one credit and one delivered result.
    const single = await service.graphql(
      `mutation($input: SkipTraceInput!) { __typename skipTrace(input: $input) { id status } }`,
      { input: { address: ADDRESS } },
      key,
    );
    expect(single.body.data.skipTrace.status).toBe('records_found');
    expect(await ledger(organizationId)).toEqual({ credits: 9, charges: 1, chargedRequests: 1 });
  });

  it('does not lock a key out, nor charge it, when its callers abort: sockets closed right after sending', async () => {
    const { organizationId, key } = await skipTraceOrganization(50);
    const body = JSON.stringify({ address: ADDRESS });
    const request = `POST /api/v1/skiptrace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const port = Number(new URL(service.baseUrl).port);
    // Fifteen requests, each closed at a different moment: at once, or after a few milliseconds.
    await Promise.all(
      Array.from(
        { length: 15 },
        (_, i) =>
          new Promise<void>((resolve) => {
            const socket = connect(port, '127.0.0.1', () => {
              socket.write(request);
              setTimeout(() => socket.destroy(), i % 5);
            });
            socket.on('error', () => undefined);
            socket.on('close', () => resolve());
          }),
      ),
    );
    // The key is not locked out: its slots came back, on REST and on /graphql.
    await expect.poll(async () => (await restTrace(key)).status, { timeout: 5000 }).toBe(200);
    const viaGraphql = await service.graphql(TRACE, { input: { address: ADDRESS } }, key);
    expect(viaGraphql.body.data?.skipTrace.status).toBe('records_found');
    // Only the two delivered traces are charged, once the reversals of undelivered ones have run.
    await expect.poll(() => ledger(organizationId), { timeout: 5000 }).toEqual({ credits: 48, charges: 2, chargedRequests: 2 });
    const outcomes = await service.sql<{ outcome: string; n: number }>(
      `select outcome, count(*)::int as n from skip_trace_requests where organization_id = ? group by outcome order by outcome`,
      [organizationId],
    );
    expect(outcomes.find((o) => o.outcome === 'records_found')?.n).toBe(2);
  });

  it('answers 429 concurrency_limit with Retry-After', async () => {
    const { key } = await skipTraceOrganization(50);
    // Hold the key's three slots with requests whose bodies have not arrived yet.
    const body = JSON.stringify({ address: ADDRESS });
    const port = Number(new URL(service.baseUrl).port);
    const holders = Array.from({ length: 3 }, () =>
      connect(port, '127.0.0.1', function (this: ReturnType<typeof connect>) {
        this.write(
          `POST /api/v1/skiptrace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
      }).on('error', () => undefined),
    );
    try {
      // Headers sent, bodies pending: each holder has taken its slot once its headers are read.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const refused = await restTrace(key);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('concurrency_limit');
      expect(refused.headers.get('retry-after')).toBe('1');
    } finally {
      holders.forEach((socket) => socket.destroy());
    }
    await expect.poll(async () => (await restTrace(key)).status, { timeout: 3000 }).toBe(200);
  });
});

describe('one credential per request, read from the Authorization header only', () => {
  it('refuses a request with two Authorization headers on every route, whichever comes first', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    const { key } = await skipTraceOrganization(5);
    const cases = [
      {
        path: '/api/v1/call',
        body: '{"operationId":"getNotificationCounts"}',
        keys: [user.key, `gk_${'A'.repeat(40)}`],
        code: '"invalid_key"',
      },
      {
        path: '/api/v1/call',
        body: '{"operationId":"getNotificationCounts"}',
        keys: [`gk_${'A'.repeat(40)}`, user.key],
        code: '"invalid_key"',
      },
      { path: '/api/v1/skiptrace', body: JSON.stringify({ address: ADDRESS }), keys: [key, key], code: '"invalid_key"' },
      { path: '/graphql', body: '{"query":"{ __typename }"}', keys: [service.platformToken, user.key], code: '"UNAUTHENTICATED"' },
    ];
    for (const c of cases) {
      const text = await raw(
        `POST ${c.path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n` +
          c.keys.map((k) => `Authorization: Bearer ${k}\r\n`).join('') +
          `Content-Length: ${Buffer.byteLength(c.body)}\r\n\r\n${c.body}`,
      );
      expect(text, c.path).toMatch(/^HTTP\/1\.1 401/);
      expect(text, c.path).toContain(c.code);
    }
  });

  it('never logs the values of a query string, where a caller may have put a key', async () => {
    const secret = `gk_${'Q'.repeat(40)}`;
    await service.request(`/graphql?access_token=${secret}`, {
      headers: { authorization: `Bearer ${service.platformToken}`, accept: 'application/json' },
    });
    await service.request(`/api/v1/operations?key=${secret}&x=1`);
    await service.request(`/nowhere?token=${secret}`);
    const text = logLines.join('');
    expect(text).toContain('access_token=[redacted]');
    expect(text).not.toContain(secret);
  });
});

describe('/graphql: JSON bodies only, and no CORS', () => {
  it('answers 415 in GraphQL shape to a POST that is not application/json, and still executes JSON with charset', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    const body = JSON.stringify({ query: '{ notificationCounts { unreadCount } }' });
    for (const contentType of ['text/plain', 'application/xml', 'application/graphql', 'application/x-www-form-urlencoded', undefined]) {
      const headers: Record<string, string> = { authorization: `Bearer ${user.key}` };
      if (contentType) headers['content-type'] = contentType;
      const result = await service.request('/graphql', { method: 'POST', headers, body: new Blob([body]) });
      expect(result.status, String(contentType)).toBe(415);
      expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    const ok = await service.request('/graphql', {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.notificationCounts.unreadCount).toBe(0);
  });

  it('sends no CORS headers, whatever the Origin, and refuses preflights', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    const origin = 'https://evil.example';
    const post = await service.request('/graphql', {
      method: 'POST',
      headers: { origin, authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    const preflight = await service.request('/graphql', {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    });
    for (const result of [post, preflight]) {
      const cors = [...result.headers.keys()].filter((name) => name.startsWith('access-control-'));
      expect(cors).toEqual([]);
    }
    expect(post.status).toBe(200);
    expect(preflight.status).toBe(405);
  });
});

describe('URLs the router cannot read', () => {
  it('answers 404 not_found in the contract shape, with X-Request-Id, for undecodable and over-long paths', async () => {
    for (const path of ['/%ff', '/api/v1/operations/%ff', `/api/v1/operations/${'x'.repeat(300)}`, '/api/%c0%af']) {
      const result = await service.request(path);
      expect(result.status, path).toBe(404);
      expect(result.body.error.code, path).toBe('not_found');
      expect(result.headers.get('x-request-id'), path).toBeTruthy();
    }
  });
});

describe('every route counts against a window', () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startService({
      GATEWAY_RATE_LIMIT_PER_MIN: '4',
      SKIPTRACE_RATE_LIMIT_PER_MIN: '3',
      PLATFORM_RATE_LIMIT_PER_MIN: '30',
      AUTH_FAILURE_LIMIT_PER_MIN: '3',
      TRUST_PROXY: 'true',
    });
  });
  afterAll(() => limited?.close());

  it("shares a gateway key's window between /api/v1/call, /graphql and /schema.graphql", async () => {
    const user = await limited.provision({ scopes: ['READ'] });
    const auth = { authorization: `Bearer ${user.key}` };
    expect((await limited.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(200);
    expect((await limited.graphql('{ notificationCounts { unreadCount } }', {}, user.key)).status).toBe(200);
    expect((await limited.request('/schema.graphql', { headers: auth })).status).toBe(200);
    expect((await limited.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(200);
    const graphql = await limited.request('/graphql', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __typename }' }),
    });
    expect(graphql.status).toBe(429);
    expect(graphql.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(Number(graphql.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(graphql.headers.get('x-ratelimit-limit')).toBe('4');
    const schema = await limited.request('/schema.graphql', { headers: auth });
    expect(schema.status).toBe(429);
    expect(schema.body.error.code).toBe('rate_limited');
    expect((await limited.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(429);
  });

  it("shares a skip trace key's window between the REST route and skipTrace on /graphql, one point per request", async () => {
    const { organizationId } = await limited.provision();
    const key = (await limited.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId }))
      .body.data.generateSkipTraceKey.secret;
    const statuses = [];
    statuses.push((await limited.graphql('{ __typename }', {}, key)).status);
    statuses.push((await limited.graphql('{ __typename }', {}, key)).status);
    statuses.push(
      (
        await limited.request('/api/v1/skiptrace', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    );
    statuses.push((await limited.graphql('{ __typename }', {}, key)).status);
    expect(statuses).toEqual([200, 200, 422, 429]);
  });

  it('gives the platform token a window of its own', async () => {
    let status = 200;
    let calls = 0;
    while (status === 200 && calls < 40) {
      status = (await limited.graphql('{ __typename }')).status;
      calls++;
    }
    expect(status).toBe(429);
    // Provisioning above spent some of the 30; the window closed within it.
    expect(calls).toBeLessThanOrEqual(30);
  });

  it('counts wrong bearer tokens on /graphql per client IP, like every other route', async () => {
    const headers = { 'x-forwarded-for': `10.${randomInt(255)}.${randomInt(255)}.${randomInt(255)}`, 'content-type': 'application/json' };
    const guess = (token: string) =>
      limited.request('/graphql', {
        method: 'POST',
        headers: { ...headers, authorization: `Bearer ${token}` },
        body: '{"query":"{ __typename }"}',
      });
    const results = [
      await guess('wrong-platform-token-guess'),
      await guess(`gk_${'C'.repeat(40)}`),
      await guess(`stk_${'D'.repeat(40)}`),
      await guess('another-guess-123456'),
    ];
    expect(results.map((r) => r.status)).toEqual([401, 401, 401, 429]);
    expect(results[3].body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(results[0].headers.get('x-ratelimit-limit')).toBe('3');
  });
});
