/**
 * Property-based fuzzing of the shapes that found the hardening issue's attacks (fast-check, over
 * real HTTP): aliased introspection with fragment fan-out, many distinct documents, skip trace
 * requests aborted or trickled at random moments, requests pipelined on one connection (behind
 * responses the client never reads) while their Idempotency-Keys are replayed elsewhere, many keys
 * of one user issued and revoked at once, and many marks of one user at once, some of their callers
 * leaving. Whatever comes in, nothing is a 5xx, the process keeps answering, no key or user stays
 * locked out, every charge belongs to a delivered 200, no user holds more than its keys' limit, and
 * counts stay exact.
 *
 * `FUZZ_SCALE=10 npx vitest run test/fuzz` multiplies every run count.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';
import { parseResponses, pipeline, WIRE_SLOW_RESPONSE, wireRequest, wireTrace } from '../support/pipelining.js';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const TIMEOUT = 120_000 * Math.max(1, SCALE);
const LIMITS = { interruptAfterTimeLimit: 60_000 * Math.max(1, SCALE), markInterruptAsFailure: true };
const MAX_IN_FLIGHT = 4;
const ADDRESS = { line1: '9 Fuzz Court', city: 'Austin', state: 'TX', zip: '78701' };

let service: TestService;
let reader: Provisioned;
let organizationId: string;
let skipTraceKey: string;

beforeAll(async () => {
  service = await startService({
    GATEWAY_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
  });
  reader = await service.provision({ scopes: ['READ'] });
  organizationId = (await service.graphql(`mutation($n: String!) { createOrganization(name: $n) { id } }`, { n: `Fuzz ${randomUUID()}` }))
    .body.data.createOrganization.id;
  await service.graphql(`mutation($o: ID!) { addSkipTraceCredits(organizationId: $o, amount: 100000, reference: "fuzz") { id } }`, {
    o: organizationId,
  });
  skipTraceKey = (await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId }))
    .body.data.generateSkipTraceKey.secret;
  await service.graphql(`mutation($i: [PropertyRecordInput!]!) { importPropertyRecords(input: $i) { imported } }`, {
    i: [{ address: ADDRESS, owners: [{ type: 'person', firstName: 'Ann', lastName: 'Lee' }] }],
  });
});
afterAll(() => service?.close());

const postGraphql = (query: string) =>
  service.request('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${reader.key}` },
    body: JSON.stringify({ query }),
  });

/** The default MAX_KEYS_PER_USER. */
const MAX_KEYS = 25;
const API_KEYS_PAGE = `query($u: ID!, $first: Int, $after: String) { apiKeys(userId: $u, first: $first, after: $after) { nodes { id } nextCursor } }`;
const issueKey = (userId: string) =>
  service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { id } }`, { u: userId });
/**
 * A gateway call on a connection of its own that `signal` destroys (a caller leaving); null when
 * it was destroyed before the answer came. (fetch keeps a connection it opened for an aborted
 * call in its pool, which would hold the service's close.)
 */
function callOnItsOwnConnection(key: string, body: unknown, signal: AbortSignal) {
  return new Promise<{ status: number; body: any } | null>((resolve) => {
    const call = request(
      { host: '127.0.0.1', port: new URL(service.baseUrl).port, path: '/api/v1/call', method: 'POST', agent: false, signal },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
        response.on('error', () => resolve(null));
      },
    );
    call.setHeader('content-type', 'application/json');
    call.setHeader('authorization', `Bearer ${key}`);
    call.on('error', () => resolve(null));
    call.end(JSON.stringify(body));
  });
}

async function expectServing() {
  expect((await service.call(reader.key, { operationId: 'getNotificationCounts' })).status).toBe(200);
}

// ---------------------------------------------------------------------------
// Introspection documents: a root of aliased __schema/__type selections over a chain of fragments,
// each fragment repeating the next one in several introspection positions.

/** Positions on __Type where a __Type-valued selection can hold the next fragment. */
const POSITIONS = [
  (next: string) => `ofType { ...${next} }`,
  (next: string) => `fields(includeDeprecated: true) { name type { ...${next} ofType { ...${next} } } }`,
  (next: string) => `fields { args { name type { ...${next} } } }`,
  (next: string) => `inputFields { name type { ...${next} } }`,
  (next: string) => `interfaces { ...${next} }`,
  (next: string) => `possibleTypes { ...${next} }`,
];

const introspectionDocument = fc
  .record({
    aliases: fc.integer({ min: 1, max: 15 }),
    root: fc.constantFrom('schema', 'type'),
    fragments: fc.array(fc.array(fc.integer({ min: 0, max: POSITIONS.length - 1 }), { minLength: 1, maxLength: 4 }), {
      minLength: 1,
      maxLength: 6,
    }),
  })
  .map(({ aliases, root, fragments }) => {
    const selection = root === 'schema' ? '__schema { types { ...F0 } }' : '__type(name: "Query") { ...F0 }';
    const definitions = fragments.map((positions, i) => {
      const next = i + 1 < fragments.length ? `F${i + 1}` : null;
      const body = next ? positions.map((p) => POSITIONS[p](next)).join(' ') : '';
      return `fragment F${i} on __Type { name kind description enumValues { name } ${body} }`;
    });
    return `{ ${Array.from({ length: aliases }, (_, a) => `a${a}: ${selection}`).join(' ')} } ${definitions.join(' ')}`;
  });

/** Many distinct, individually legal feed documents. */
const feedDocument = fc
  .record({
    aliases: fc.integer({ min: 1, max: 15 }),
    limit: fc.integer({ min: 1, max: 50 }),
    fields: fc.subarray(
      ['id', 'notificationType', 'isSeen', 'title', 'body', 'createdAt', 'seenAt', 'contactId', 'dealId', 'noteId', 'taskId'],
      { minLength: 1 },
    ),
    name: fc.uuid().map((u) => u.replace(/-/g, '')),
  })
  .map(
    ({ aliases, limit, fields, name }) =>
      `query Q${name} { ${Array.from({ length: aliases }, (_, a) => `p${a}: notifications(limit: ${limit}) { total notifications { ${fields.join(' ')} } }`).join(' ')} }`,
  );

describe('attack shapes under fuzzing', () => {
  it(
    `aliased introspection with fragment fan-out (${runs(60)} documents): 200 within the budget, 400 past it, never more`,
    async () => {
      const statuses: Record<number, number> = {};
      await fc.assert(
        fc.asyncProperty(introspectionDocument, async (query) => {
          const result = await postGraphql(query);
          statuses[result.status] = (statuses[result.status] ?? 0) + 1;
          const where = `${query.slice(0, 400)} → ${result.status} ${result.text.slice(0, 200)}`;
          expect([200, 400], where).toContain(result.status);
          if (result.status === 400) expect(result.body.errors[0].extensions.code, where).toBe('BAD_USER_INPUT');
          // Whatever passes the budget stays small.
          expect(result.text.length, where).toBeLessThan(2 * 1024 * 1024);
        }),
        { ...LIMITS, numRuns: runs(60) },
      );
      console.info(`introspection fuzz: by status ${JSON.stringify(statuses)}`);
      await expectServing();
    },
    TIMEOUT,
  );

  it(
    `many distinct legal documents (${runs(40) * 10} documents) are all served`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(feedDocument, { minLength: 10, maxLength: 10 }), async (queries) => {
          const results = await Promise.all(queries.map(postGraphql));
          for (const result of results) expect(result.status, result.text.slice(0, 200)).toBe(200);
        }),
        { ...LIMITS, numRuns: runs(40) },
      );
      await expectServing();
    },
    TIMEOUT,
  );

  it(
    `skip trace requests aborted or trickled at random moments (${runs(25)} batches of 8): no locked key, a charge only per delivered 200`,
    async () => {
      const body = JSON.stringify({ address: ADDRESS });
      const port = Number(new URL(service.baseUrl).port);
      let delivered = 0;
      // Requests sent in full and then dropped: the server may have written the whole 200 before the
      // drop (delivered, so charged) or not (reversed); the client cannot tell which.
      let ambiguous = 0;
      const [{ credits: before }] = await service.sql<{ credits: number }>(
        `select skip_trace_credits as credits from organizations where id = ?`,
        [organizationId],
      );
      const plan = fc.record({
        // How much of the request is sent before the client goes away (the whole of it, or part).
        sent: fc.oneof(fc.constant(Infinity), fc.integer({ min: 0, max: body.length + 200 })),
        closeAfterMs: fc.integer({ min: 0, max: 15 }),
        waitForAnswer: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(plan, { minLength: 8, maxLength: 8 }), async (plans) => {
          const outcomes = await Promise.all(
            plans.map(
              (p) =>
                new Promise<string>((resolve) => {
                  const request = `POST /api/v1/skiptrace HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${skipTraceKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
                  let text = '';
                  const socket = connect(port, '127.0.0.1', () => {
                    socket.write(request.slice(0, p.sent));
                    if (!(p.waitForAnswer && p.sent === Infinity)) setTimeout(() => socket.destroy(), p.closeAfterMs);
                  });
                  socket.on('data', (chunk) => {
                    text += String(chunk);
                    if (p.waitForAnswer && /\r\n\r\n[\s\S]*\}$/.test(text)) socket.destroy();
                  });
                  socket.on('error', () => undefined);
                  socket.on('close', () => resolve(text));
                }),
            ),
          );
          // A 200 the client read in full was delivered; anything else must not stay charged.
          const read = outcomes.map((text) => /^HTTP\/1\.1 200/.test(text) && /"status":"records_found"/.test(text));
          delivered += read.filter(Boolean).length;
          ambiguous += plans.filter((p, i) => !read[i] && p.sent === Infinity).length;
          // No slot leaked: the key answers at once.
          await expect
            .poll(
              async () =>
                (
                  await service.request('/api/v1/skiptrace', {
                    method: 'POST',
                    headers: { 'content-type': 'application/json', authorization: `Bearer ${skipTraceKey}` },
                    body,
                  })
                ).status,
              { timeout: 5000 },
            )
            .toBe(200);
          delivered++;
        }),
        { ...LIMITS, numRuns: runs(25) },
      );
      // Charges of undelivered responses are reversed shortly after their connections close.
      const ledger = async () => {
        const [row] = await service.sql<{ credits: number; charges: number; charged: number }>(
          `select o.skip_trace_credits as credits,
                  (select count(*)::int from skip_trace_credit_ledger l where l.organization_id = o.id and l.kind = 'charge') as charges,
                  (select count(*)::int from skip_trace_requests r where r.organization_id = o.id and r.charged) as charged
             from organizations o where o.id = ?`,
          [organizationId],
        );
        return row;
      };
      // Settled: the balance, the ledger and the audit agree, every trace read in full is charged,
      // and nothing else is, beyond the requests whose delivery the client cannot know.
      await expect
        .poll(
          async () => {
            const { credits, charges, charged } = await ledger();
            return credits === before - charges && charged === charges && charges >= delivered && charges <= delivered + ambiguous;
          },
          { timeout: 10_000 },
        )
        .toBe(true);
      const { charges } = await ledger();
      console.info(`abort fuzz: ${delivered} traces read in full, ${ambiguous} dropped after sending in full, ${charges} charged`);
    },
    TIMEOUT,
  );

  it(
    `many keys of one user, issued and revoked at once (${runs(8)} users, up to 6 rounds each): never more than ${MAX_KEYS} active, every key listed once`,
    async () => {
      const round = fc.record({ issues: fc.integer({ min: 0, max: 15 }), revokes: fc.integer({ min: 0, max: 5 }) });
      await fc.assert(
        fc.asyncProperty(fc.array(round, { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 30 }), async (rounds, first) => {
          const user = await service.provision({ organizationId });
          const active = [user.keyId];
          for (const { issues, revokes } of rounds) {
            const revoked = active.splice(0, revokes);
            const [issued] = await Promise.all([
              Promise.all(Array.from({ length: issues }, () => issueKey(user.userId))),
              Promise.all(revoked.map((id) => service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id }))),
            ]);
            for (const result of issued) {
              if (result.body.data?.createApiKey) active.push(result.body.data.createApiKey.id);
              else expect(result.body.errors[0].extensions.code, JSON.stringify(result.body)).toBe('BAD_USER_INPUT');
            }
            // Concurrent revocations may free places for this round's issues, or not yet.
            const before = active.length - issued.filter((r) => r.body.data?.createApiKey).length;
            expect(active.length).toBeLessThanOrEqual(MAX_KEYS);
            expect(active.length).toBeGreaterThanOrEqual(Math.min(MAX_KEYS - revoked.length, before + issues));
          }
          const listed: string[] = [];
          let after: string | null = null;
          do {
            const page: { body: any } = await service.graphql(API_KEYS_PAGE, { u: user.userId, first, after });
            expect(page.body.data.apiKeys.nodes.length).toBeLessThanOrEqual(first);
            listed.push(...page.body.data.apiKeys.nodes.map((node: { id: string }) => node.id));
            after = page.body.data.apiKeys.nextCursor;
          } while (after);
          const rows = await service.sql<{ id: string; active: boolean }>(
            `select id, revoked_at is null as active from api_keys where user_id = ? order by created_at desc, id desc`,
            [user.userId],
          );
          expect(listed).toEqual(rows.map((row) => row.id));
          expect(
            rows
              .filter((row) => row.active)
              .map((row) => row.id)
              .sort(),
          ).toEqual([...active].sort());
        }),
        { ...LIMITS, numRuns: runs(8) },
      );
      await expectServing();
    },
    TIMEOUT,
  );

  it(
    `one user's many keys opening streams that read, stall or leave at random (${runs(15)} batches of 14): 200 or 429, at most 10 open, every slot freed`,
    async () => {
      const owner = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
      const keys = [owner.key];
      for (let i = 0; i < 5; i++)
        keys.push(
          (
            await service.graphql(
              `mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { secret } }`,
              { u: owner.userId },
              owner.key,
            )
          ).body.data.createApiKey.secret,
        );
      const port = Number(new URL(service.baseUrl).port);
      const client = fc.record({
        key: fc.integer({ min: 0, max: keys.length - 1 }),
        route: fc.constantFrom('gateway', 'graphql'),
        behaviour: fc.constantFrom('read', 'stall', 'leave'),
        leaveAfterMs: fc.integer({ min: 0, max: 50 }),
      });
      const statuses: Record<string, number> = {};
      await fc.assert(
        fc.asyncProperty(fc.array(client, { minLength: 14, maxLength: 14 }), async (clients) => {
          const sockets = clients.map(
            (c) =>
              new Promise<{ head: string; close(): void }>((resolve) => {
                const body =
                  c.route === 'gateway'
                    ? JSON.stringify({ operationId: 'watchNotifications' })
                    : JSON.stringify({ query: 'subscription { notificationEvents { kind notificationIds } }' });
                const path = c.route === 'gateway' ? '/api/v1/call' : '/graphql';
                let head = '';
                const socket = connect(port, '127.0.0.1', () =>
                  socket.write(
                    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${keys[c.key]}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
                  ),
                );
                const done = () => resolve({ head, close: () => socket.destroy() });
                socket.on('data', (chunk) => {
                  if (head.includes('\r\n\r\n')) return;
                  head += String(chunk);
                  if (!head.includes('\r\n\r\n')) return;
                  if (c.behaviour === 'stall') socket.pause();
                  if (c.behaviour === 'leave') setTimeout(() => socket.destroy(), c.leaveAfterMs);
                  done();
                });
                socket.on('error', () => undefined);
                socket.on('close', done);
              }),
          );
          const answered = await Promise.all(sockets);
          await service.app.services.notificationEvents.updated(owner.userId, [randomUUID()]);
          expect(service.app.services.streams.size).toBeLessThanOrEqual(10);
          for (const { head } of answered) {
            const status = head.slice(9, 12);
            statuses[status] = (statuses[status] ?? 0) + 1;
            expect(['200', '429'], head.slice(0, 300)).toContain(status);
            if (status === '429') expect(head).toMatch(/concurrency_limit|RATE_LIMITED/);
          }
          for (const { close } of answered) close();
          await expect.poll(() => service.app.services.streams.size, { timeout: 5000 }).toBe(0);
        }),
        { ...LIMITS, numRuns: runs(15) },
      );
      console.info(`stream fuzz: by status ${JSON.stringify(statuses)}`);
      await expectServing();
    },
    TIMEOUT,
  );

  it(
    `requests pipelined on one connection, read or never read, while their keys are replayed elsewhere (${runs(25)} batches): no 5xx, every delivered trace charged once, nothing else`,
    async () => {
      const org = await fuzzOrganization(10_000);
      const ledger = () => ledgerOf(org.organizationId);
      const { credits: before } = await ledger();
      // Ids of traces a client read in full (on a pipeline or as a replay), and the pipelined traces
      // whose answer the client did not read in full: charged or not, the client cannot tell.
      const delivered = new Set<string>();
      let ambiguous = 0;
      const traceBody = (variant: number) =>
        [
          { address: ADDRESS },
          { address: ADDRESS, actor: { type: 'person', firstName: 'Ann', lastName: 'Lee' } },
          { address: { ...ADDRESS, zip: '787' } },
        ][variant];
      const item: fc.Arbitrary<Pipelined> = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record({
            kind: fc.constant('trace' as const),
            key: fc.option(fc.nat(1), { nil: null }),
            body: fc.constantFrom(0, 0, 1, 2),
          }),
        },
        { weight: 2, arbitrary: fc.constant({ kind: 'slow' as const }) },
        { weight: 1, arbitrary: fc.constantFrom({ kind: 'gateway' as const }, { kind: 'account' as const }) },
      );
      const batch = fc.record({
        connections: fc.array(
          fc.record({ requests: fc.array(item, { minLength: 1, maxLength: 5 }), read: fc.boolean(), closeAfterMs: fc.nat(300) }),
          { minLength: 1, maxLength: 3 },
        ),
        replays: fc.array(fc.record({ key: fc.nat(1), body: fc.nat(1), afterMs: fc.nat(300) }), { maxLength: 4 }),
      });
      const wire = (request: Pipelined, keys: string[]) => {
        switch (request.kind) {
          case 'trace':
            return wireTrace(org.key, traceBody(request.body), request.key === null ? {} : { 'Idempotency-Key': keys[request.key] });
          case 'slow':
            return WIRE_SLOW_RESPONSE;
          case 'gateway':
            return wireRequest(
              'POST',
              '/api/v1/call',
              { Authorization: `Bearer ${reader.key}`, 'Content-Type': 'application/json' },
              '{"operationId":"getNotificationCounts"}',
            );
          default:
            return wireRequest('GET', '/api/v1/skiptrace/account', { Authorization: `Bearer ${org.key}` });
        }
      };
      /** A trace's 200 read in full: its id. */
      const deliveredId = (status: number, contentType: string | null, text: string) => {
        expect(status, text.slice(0, 200)).toBeLessThan(500);
        const body = status === 200 && contentType?.startsWith('application/json') ? JSON.parse(text) : null;
        return body?.persons ? (body.id as string) : null;
      };
      await fc.assert(
        fc.asyncProperty(batch, async ({ connections, replays }) => {
          const keys = [randomUUID(), randomUUID()];
          const pipelines = connections.map(async (connection) => {
            const { socket, closed } = pipeline(
              service.baseUrl,
              connection.requests.map((request) => wire(request, keys)),
              { read: connection.read },
            );
            setTimeout(() => socket.destroy(), connection.closeAfterMs);
            const answers = parseResponses(await closed);
            const traces = connection.requests.filter((request) => request.kind === 'trace').length;
            const read = answers
              .map((answer) => deliveredId(answer.status, answer.headers['content-type'], answer.body))
              .filter((id) => id !== null);
            read.forEach((id) => delivered.add(id));
            ambiguous += traces - answers.filter((answer, i) => connection.requests[i].kind === 'trace').length;
          });
          const replayed = replays.map(async (replay) => {
            await new Promise((resolve) => setTimeout(resolve, replay.afterMs));
            const result = await service.request('/api/v1/skiptrace', {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${org.key}`, 'idempotency-key': keys[replay.key] },
              body: JSON.stringify(traceBody(replay.body)),
            });
            const id = deliveredId(result.status, result.headers.get('content-type'), result.text);
            if (id) delivered.add(id);
          });
          await Promise.all([...pipelines, ...replayed]);
        }),
        { ...LIMITS, numRuns: runs(25) },
      );
      // Settled once the reversals of lost answers have run: the balance, the ledger and the audit
      // agree; every trace read in full is charged, and nothing else beyond what the client cannot know.
      await expect
        .poll(
          async () => {
            const { credits, charges, charged } = await ledger();
            return credits === before - charges.length && charged === charges.length;
          },
          { timeout: 10_000 },
        )
        .toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const { credits, charges, charged } = await ledger();
      expect(credits).toBe(before - charges.length);
      expect(charged).toBe(charges.length);
      expect([...delivered].filter((id) => !charges.includes(id))).toEqual([]);
      expect(charges.length).toBeLessThanOrEqual(delivered.size + ambiguous);
      console.info(`pipelining fuzz: ${delivered.size} traces read in full, ${ambiguous} not read, ${charges.length} charged`);
      await expectServing();
    },
    TIMEOUT,
  );

  it(
    `marks of one user at once, callers leaving at random moments (${runs(15)} batches of 12): only 200 or 429 concurrency_limit, no place kept, exact counts`,
    async () => {
      const writer = await service.provision();
      const ids = await publish(
        service,
        writer.userId,
        Array.from({ length: 300 }, (_, i) => ({ notificationType: i % 2 ? 'deal_created' : 'task_overdue', title: `fuzz ${i}` })),
      );
      const mark = fc.oneof(
        fc.record({
          operationId: fc.constant('markNotificationsRead'),
          variables: fc.record({ notificationIds: fc.subarray(ids, { maxLength: 200 }), isSeen: fc.boolean() }),
        }),
        fc.record({
          operationId: fc.constant('markAllNotificationsRead'),
          variables: fc.record({ isSeen: fc.boolean(), notificationTypeFilter: fc.constantFrom('', 'deal_created', 'task_overdue') }),
        }),
      );
      // A caller that leaves after a few milliseconds (waiting, running or answered), or stays.
      const plan = fc.record({ mark, leaveAfterMs: fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }) });
      await fc.assert(
        fc.asyncProperty(fc.array(plan, { minLength: 12, maxLength: 12 }), async (plans) => {
          const statuses = await Promise.all(
            plans.map(async (p) => {
              const abort = new AbortController();
              if (p.leaveAfterMs !== undefined) setTimeout(() => abort.abort(), p.leaveAfterMs);
              const answer = await callOnItsOwnConnection(writer.key, p.mark, abort.signal);
              if (answer?.status === 429) expect(answer.body.error.code).toBe('concurrency_limit');
              return answer?.status ?? 'left';
            }),
          );
          expect(statuses.filter((status) => status !== 200 && status !== 429 && status !== 'left')).toEqual([]);
          // No place kept by a caller that left: the user's next mark is accepted.
          await expect
            .poll(
              async () =>
                (
                  await service.call(writer.key, {
                    operationId: 'markNotificationsRead',
                    variables: { notificationIds: [ids[0]], isSeen: true },
                  })
                ).status,
              {
                timeout: 5000,
              },
            )
            .toBe(200);
        }),
        { ...LIMITS, numRuns: runs(15) },
      );
      await expect.poll(() => service.app.services.feedWrites.queue.busyKeys, { timeout: 5000 }).toBe(0);
      // A caller that left before its request reached the queue may still write after the queue is empty: compare once writes stop.
      const drift = async () => {
        const [truth] = await service.sql<{ unread: number; read: number }>(
          `select (count(*) filter (where not is_seen))::int as unread, (count(*) filter (where is_seen))::int as read from notification_states() where user_id = ?`,
          [writer.userId],
        );
        const counts = (await service.call(writer.key, { operationId: 'getNotificationCounts' })).body.data;
        return { unread: counts.unreadCount - Number(truth.unread), read: counts.readCount - Number(truth.read) };
      };
      await expect.poll(drift, { timeout: 5000 }).toEqual({ unread: 0, read: 0 });
    },
    TIMEOUT,
  );
});

/** A request pipelined on a connection: a trace (with one of the batch's Idempotency-Keys, or none), a response too large to finish unread, a gateway call, an account read. */
type Pipelined = { kind: 'trace'; key: number | null; body: number } | { kind: 'slow' } | { kind: 'gateway' } | { kind: 'account' };

/** A new organization with `credits` and a skip trace key. */
async function fuzzOrganization(credits: number) {
  const created = await service.graphql(`mutation($n: String!) { createOrganization(name: $n) { id } }`, { n: `Fuzz ${randomUUID()}` });
  const id = created.body.data.createOrganization.id as string;
  await service.graphql(`mutation($o: ID!, $n: Int!) { addSkipTraceCredits(organizationId: $o, amount: $n, reference: "fuzz") { id } }`, {
    o: id,
    n: credits,
  });
  const key = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: id });
  return { organizationId: id, key: key.body.data.generateSkipTraceKey.secret as string };
}

/** The organization's balance, the request ids of its ledger charges and its charged audit rows. */
async function ledgerOf(organizationId: string) {
  const [account] = await service.sql<{ credits: number; charged: number }>(
    `select skip_trace_credits as credits,
            (select count(*)::int from skip_trace_requests r where r.organization_id = o.id and r.charged) as charged
       from organizations o where o.id = ?`,
    [organizationId],
  );
  const charges = await service.sql<{ id: string }>(
    `select request_id::text as id from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
    [organizationId],
  );
  return { credits: Number(account.credits), charged: account.charged, charges: charges.map((row) => row.id) };
}
