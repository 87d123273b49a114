/**
 * Property-based fuzzing of `POST /api/v1/call` over real HTTP (fast-check): arbitrary bodies,
 * valid operationIds with arbitrary variables, arbitrary cursors, arbitrary headers, raw bytes
 * (invalid UTF-8 included). Whatever comes in:
 *   - the status is never 5xx;
 *   - every error is `{"error": {code, message, details?}}` with a contract code whose status matches;
 *   - every success has the operation's shape;
 *   - for valid operationIds, the variables are valid under the JSON Schema discovery publishes
 *     exactly when the server does not refuse them (422), with no exception;
 *   - the process stays up (`/healthz` after every batch).
 *
 * Each run sends a batch of BATCH requests in parallel. `FUZZ_SCALE=10 npx vitest run test/fuzz`
 * multiplies every run count for a longer session.
 *
 * Three tests here fail until bugs in `src/http/server.ts` are fixed (not this suite's files):
 *   - deeply nested JSON with U+0000: the body parser's recursive `containsNul` overflows the stack → 500;
 *   - header bytes Node's HTTP parser refuses, and malformed / over-long request lines: answered by
 *     Fastify's default `clientErrorHandler` (`{"error":"Bad Request","message":"Client Error"}`,
 *     no X-Request-Id), not the contract's `{"error": {code, message}}`.
 */
import { connect } from 'node:net';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type HttpResult, type Provisioned, type TestService } from '../support/harness.js';
import { REST_STATUS } from '../support/contract.js';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const BATCH = 4;
/** The REST routes' body limit (64 KiB). */
const BODY_LIMIT_BYTES = 64 * 1024;
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const TIMEOUT = 120_000 * Math.max(1, SCALE);
/** Bounds a run, shrinking included, so a failure is reported (with the smallest input found so far) rather than timing out. */
const LIMITS = { interruptAfterTimeLimit: 60_000 * Math.max(1, SCALE), markInterruptAsFailure: true };
/** Runs per property (each run is one batch of BATCH requests, except rawHeaders: one request). */
const RUNS = {
  json: runs(120),
  anything: runs(80),
  shape: runs(80),
  variables: runs(160),
  cursors: runs(100),
  headers: runs(120),
  rawBytes: runs(60),
  invalidUtf8: runs(60),
  rawHeaders: runs(100),
  nesting: runs(40),
};

const OPERATIONS = [
  'listNotifications',
  'getNotificationCounts',
  'getAvailableNotificationTypes',
  'markNotificationsRead',
  'viewer',
  'markAllNotificationsRead',
] as const;
const VARIABLE_NAMES = ['notificationTypeFilter', 'seen', 'searchTerm', 'limit', 'cursor', 'notificationIds', 'isSeen'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

let service: TestService;
let user: Provisioned;
let ids: string[] = [];
let validCursor: string;
let skipTraceKey: string;
/** Each operation's published variables and result schemas (discovery), compiled by a default Ajv2020. */
const published = new Map<string, { variables: ValidateFunction; result: ValidateFunction }>();
const counts = { requests: 0, byStatus: {} as Record<number, number> };

beforeAll(async () => {
  service = await startService({
    GATEWAY_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_MAX_IN_FLIGHT: '1000',
  });
  user = await service.provision({ scopes: ['READ', 'WRITE'] });
  ids = await publish(
    service,
    user.userId,
    Array.from({ length: 12 }, (_, i) => ({
      title: `Fuzz ${i} %_\\'`,
      body: `body ${i}`,
      notificationType: i % 2 ? 'task_overdue' : 'deal_created',
    })),
  );
  const org = await service.graphql(`mutation($name: String!) { createOrganization(name: $name) { id } }`, { name: `Fuzz ${user.userId}` });
  const organizationId = org.body.data.createOrganization.id;
  await service.graphql(`mutation($org: ID!) { addSkipTraceCredits(organizationId: $org, amount: 10, reference: "fuzz") { id } }`, {
    org: organizationId,
  });
  skipTraceKey = (
    await service.graphql(`mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { secret } }`, { org: organizationId })
  ).body.data.generateSkipTraceKey.secret;
  const page = await service.call(user.key, { operationId: 'listNotifications', variables: { limit: 3 } });
  validCursor = page.body.data.nextCursor;
  expect(typeof validCursor).toBe('string');
  const discovery = await service.request('/api/v1/operations');
  const ajv = new Ajv2020();
  addFormats.default(ajv);
  for (const op of discovery.body.operations)
    published.set(op.operationId, { variables: ajv.compile(op.variables), result: ajv.compile(op.result) });
});
afterAll(async () => {
  console.info(`gateway fuzz: ${counts.requests} requests, by status ${JSON.stringify(counts.byStatus)}`);
  await service?.close();
});

// ---------------------------------------------------------------------------
// Checks

function expectContractResponse(result: HttpResult, context: unknown) {
  counts.requests++;
  counts.byStatus[result.status] = (counts.byStatus[result.status] ?? 0) + 1;
  const where = `for ${JSON.stringify(context)?.slice(0, 500)} → ${result.status} ${result.text.slice(0, 300)}`;
  expect(result.status, where).toBeLessThan(500);
  expect(result.headers.get('x-request-id'), where).toBeTruthy();
  if (result.status === 200) {
    expect(result.body, where).toHaveProperty('data');
    return;
  }
  const error = result.body?.error;
  expect(error && typeof error === 'object', where).toBe(true);
  expect(Object.keys(REST_STATUS), where).toContain(error.code);
  expect(REST_STATUS[error.code], where).toBe(result.status);
  expect(typeof error.message === 'string' && error.message.length > 0, where).toBe(true);
  if (error.details !== undefined) {
    expect(Array.isArray(error.details), where).toBe(true);
    for (const d of error.details) expect(typeof d.path === 'string' && typeof d.message === 'string', where).toBe(true);
  }
  expect(result.text, where).not.toMatch(/node_modules|\.ts:\d+|\.js:\d+|SELECT |select .* from /);
}

/** The shape of each operation's `data`. */
function expectOperationData(operationId: string, data: any, where: string) {
  switch (operationId) {
    case 'listNotifications':
      expect(Array.isArray(data.notifications), where).toBe(true);
      expect(Number.isInteger(data.total) && data.total >= 0, where).toBe(true);
      expect(typeof data.hasUnread, where).toBe('boolean');
      expect(data.nextCursor === null || typeof data.nextCursor === 'string', where).toBe(true);
      for (const n of data.notifications) expect(n.id, where).toMatch(UUID);
      break;
    case 'getNotificationCounts':
      expect(Number.isInteger(data.unreadCount) && Number.isInteger(data.readCount), where).toBe(true);
      expect(Array.isArray(data.byType), where).toBe(true);
      expect(
        data.byType.reduce((sum: number, t: { unreadCount: number }) => sum + t.unreadCount, 0),
        where,
      ).toBe(data.unreadCount);
      expect(
        data.byType.reduce((sum: number, t: { readCount: number }) => sum + t.readCount, 0),
        where,
      ).toBe(data.readCount);
      break;
    case 'getAvailableNotificationTypes':
      expect(Array.isArray(data.types), where).toBe(true);
      break;
    case 'markNotificationsRead':
    case 'markAllNotificationsRead':
      expect(data.success, where).toBe(true);
      expect(Number.isInteger(data.updatedCount) && data.updatedCount >= 0, where).toBe(true);
      break;
    case 'viewer':
      expect(data, where).toEqual({
        principal: 'user',
        organizationId: user.organizationId,
        userId: user.userId,
        keyId: user.keyId,
        keyHint: `${user.key.slice(0, 8)}…${user.key.slice(-4)}`,
        scopes: ['READ', 'WRITE'],
      });
      break;
    default:
      throw new Error(`no shape check for ${operationId}`);
  }
}

/**
 * Whether a 422's details name the cursor: `variables.cursor` when it is not even shaped like a
 * cursor (the published schema's pattern), `cursor` when the feed refuses a well-shaped one.
 */
const cursorNamed = (result: HttpResult) =>
  (result.body.error.details ?? []).some((d: { path: string }) => d.path === 'cursor' || d.path === 'variables.cursor');

async function expectHealthy() {
  const health = await service.request('/healthz');
  expect(health.status).toBe(200);
}

const call = (body: string | Buffer | undefined, headers: Record<string, string> = {}) =>
  service.request('/api/v1/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}`, ...headers },
    body: typeof body === 'string' || body === undefined ? body : Uint8Array.from(body),
  });

/** Sends a batch in parallel, checks every response, then checks that the process is up. */
async function batch<T>(inputs: T[], send: (input: T) => Promise<HttpResult>, check: (input: T, result: HttpResult) => void = () => {}) {
  const results = await Promise.all(inputs.map(send));
  results.forEach((result, i) => {
    expectContractResponse(result, inputs[i]);
    check(inputs[i], result);
  });
  await expectHealthy();
}

/** One HTTP/1.1 exchange over a plain socket, for bytes fetch refuses to send. */
function rawRequest(request: Buffer): Promise<HttpResult> {
  const port = Number(new URL(service.baseUrl).port);
  return new Promise<HttpResult>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    let failure: Error | undefined;
    // The server may answer and close before it has read the whole request: keep what it said.
    socket.on('error', (error) => (failure = error));
    socket.on('close', () => {
      if (chunks.length === 0 && failure) return reject(failure);
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const headers = new Headers(
        head
          .split('\r\n')
          .slice(1)
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]),
      );
      const body = rest.join('\r\n\r\n');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      resolve({ status, headers, body: json, text: body });
    });
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer within 5 s')));
    // Not end(): a half-closed client may see the server close without answering. Every request
    // says `Connection: close` (or is one the server must refuse), so the server closes first.
    socket.write(request);
  });
}

// ---------------------------------------------------------------------------
// Arbitraries

/** Characters that break naive SQL, LIKE, JSON, terminals, bidi, UTF-16. */
const nastyChar = fc.constantFrom(
  '%',
  '_',
  '\\',
  "'",
  '"',
  ';',
  '--',
  '/*',
  '\u0001',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u2028',
  '\u202e',
  '\ufeff',
  '\ufffd',
  '\ud800',
  '\udfff',
  '😀',
  'é',
  'ß',
  'İ',
  ' ',
  '\t',
  '\n',
  '{',
  '[',
);
const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: nastyChar, maxLength: 30 }),
  // Around the 200-character searchTerm limit, in code points and in UTF-16 units.
  fc.integer({ min: 195, max: 205 }).chain((n) => fc.constantFrom('x'.repeat(n), '😀'.repeat(n), 'é'.repeat(n))),
  // Around the 64 KiB body limit.
  fc.integer({ min: 64 * 1024 - 120, max: 64 * 1024 + 10 }).map((n) => 'y'.repeat(n)),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    'null',
    '0',
    '-1',
    'true',
    '[]',
    '{}',
    "' or 1=1 --",
    "'; drop table notifications; --",
    '%',
    '_',
    '\\',
    '__proto__',
    'constructor',
  ),
);
const weirdValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    weirdString,
    fc.integer(),
    fc.constantFrom(0, -1, 1, 50, 51, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1.5, 1e308, -0),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...VARIABLE_NAMES, '__proto__')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A string with U+0000 in it: valid in every way but the one rule every input string meets. */
const withNul = (around: fc.Arbitrary<string>) => fc.tuple(around, around).map(([a, b]) => `${a}\u0000${b}`);
/**
 * Mostly right values, so that a case breaking one rule is often valid otherwise (and a schema
 * missing that rule would be caught), then values breaking one rule, then anything.
 */
const variants = (right: fc.Arbitrary<unknown>, oneRuleBroken: fc.Arbitrary<unknown> | null = null) =>
  fc.oneof({ arbitrary: right, weight: 4 }, ...(oneRuleBroken ? [{ arbitrary: oneRuleBroken, weight: 2 }] : []), {
    arbitrary: weirdValue,
    weight: 1,
  });
/** Values of the right type for each variable, right ones but for one rule, and wrong ones. */
const variableValue: Record<string, fc.Arbitrary<unknown>> = {
  notificationTypeFilter: variants(fc.constantFrom('deal_created', 'task_overdue', '', 'DEAL_CREATED', 'nope'), withNul(fc.string())),
  seen: variants(fc.boolean()),
  searchTerm: variants(
    fc.oneof(fc.constantFrom('Fuzz', '%', '_', '\\', "'", 'fuzz 1'), fc.string({ maxLength: 200 })),
    fc.oneof(withNul(fc.string({ maxLength: 100 })), fc.string({ minLength: 201, maxLength: 260 })),
  ),
  limit: variants(
    fc.integer({ min: 1, max: 50 }),
    fc.oneof(fc.integer({ min: -5, max: 0 }), fc.integer({ min: 51, max: 60 }), fc.double()),
  ),
  cursor: variants(fc.constant('CURSOR'), fc.constantFrom('CURSOR_WITH_NUL', 'CURSOR_TRUNCATED')),
  notificationIds: variants(
    fc.oneof(
      fc.array(fc.oneof(fc.constantFrom('ID'), fc.uuid(), weirdString), { maxLength: 8 }),
      fc
        .integer({ min: 495, max: 505 })
        .map((n) => Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`)),
    ),
    fc.array(fc.oneof(fc.uuid(), withNul(fc.string())), { minLength: 1, maxLength: 3 }),
  ),
  isSeen: variants(fc.boolean()),
};
/** Placeholders replaced by values known only after start-up. */
const resolve = (value: unknown): unknown => {
  if (value === 'CURSOR') return validCursor;
  if (value === 'CURSOR_WITH_NUL') return `${validCursor.slice(0, 10)}\u0000${validCursor.slice(10)}`;
  if (value === 'CURSOR_TRUNCATED') return validCursor.slice(0, 20);
  if (value === 'ID') return ids[0];
  if (Array.isArray(value)) return value.map(resolve);
  return value;
};

/** Each operation's own variables; the others' are unknown to it (and sent now and then, as extras). */
const OWN_VARIABLES: Record<(typeof OPERATIONS)[number], string[]> = {
  listNotifications: ['notificationTypeFilter', 'seen', 'searchTerm', 'limit', 'cursor'],
  getNotificationCounts: ['notificationTypeFilter'],
  getAvailableNotificationTypes: [],
  viewer: [],
  markNotificationsRead: ['notificationIds', 'isSeen'],
  markAllNotificationsRead: ['isSeen', 'notificationTypeFilter'],
};
const operationVariables = fc
  .constantFrom(...OPERATIONS)
  .chain((operationId) =>
    fc.tuple(
      fc.constant(operationId),
      fc.record(Object.fromEntries(OWN_VARIABLES[operationId].map((name) => [name, variableValue[name]])), { requiredKeys: [] }),
      fc.dictionary(fc.oneof(fc.string(), fc.constantFrom(...VARIABLE_NAMES)), weirdValue, { maxKeys: 2 }),
      fc.boolean().chain((extra) => (extra ? fc.boolean() : fc.constant(false))),
    ),
  )
  .map(([operationId, typed, extra, addExtra]) => ({
    operationId,
    variables: resolve(addExtra ? { ...typed, ...extra } : typed) as Record<string, unknown>,
  }));

// ---------------------------------------------------------------------------

describe('POST /api/v1/call under fuzzing', () => {
  it(
    `arbitrary JSON texts as the body (${RUNS.json * BATCH} inputs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.json(), { minLength: BATCH, maxLength: BATCH }), (bodies) => batch(bodies, (body) => call(body))),
        { ...LIMITS, numRuns: RUNS.json },
      );
    },
    TIMEOUT,
  );

  it(
    `arbitrary JavaScript values serialized as the body (${RUNS.anything * BATCH} inputs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.anything({ maxDepth: 3 }), { minLength: BATCH, maxLength: BATCH }), (values) =>
          batch(values, (value) => call(JSON.stringify(value) ?? '')),
        ),
        { ...LIMITS, numRuns: RUNS.anything },
      );
    },
    TIMEOUT,
  );

  it(
    `bodies of random shape around operationId and variables (${RUNS.shape * BATCH} inputs)`,
    async () => {
      const body = fc.record(
        {
          operationId: fc.oneof(fc.constantFrom(...OPERATIONS, 'listnotifications', ' listNotifications', '__proto__'), weirdValue),
          variables: weirdValue,
          extra: weirdValue,
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(fc.array(body, { minLength: BATCH, maxLength: BATCH }), (bodies) => batch(bodies, (b) => call(JSON.stringify(b)))),
        { ...LIMITS, numRuns: RUNS.shape },
      );
    },
    TIMEOUT,
  );

  it(
    `valid operationIds with arbitrary variables (${RUNS.variables * BATCH} inputs): the published schema and the server agree on every one`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(operationVariables, { minLength: BATCH, maxLength: BATCH }), (bodies) =>
          batch(
            bodies,
            (b) => call(JSON.stringify(b)),
            (b, result) => {
              const text = JSON.stringify(b);
              const where = `${text.slice(0, 300)} → ${result.text.slice(0, 300)}`;
              // Over the body limit nothing is read: 413 before any variable is looked at.
              if (Buffer.byteLength(text) > BODY_LIMIT_BYTES) return expect(result.status, where).toBe(413);
              // The variables as the server parses them. Valid under the schema discovery publishes
              // ⇔ the server does not refuse them (422); and what it answers has the published shape.
              const schemas = published.get(b.operationId)!;
              const valid = schemas.variables(JSON.parse(JSON.stringify(b.variables)));
              expect(result.status, `${where} (schema-valid: ${valid}, ${JSON.stringify(schemas.variables.errors)})`).toBe(
                valid ? 200 : 422,
              );
              if (result.status === 200) {
                expectOperationData(b.operationId, result.body.data, where);
                expect(schemas.result(result.body.data), `${where} ${JSON.stringify(schemas.result.errors)}`).toBe(true);
              }
            },
          ),
        ),
        { ...LIMITS, numRuns: RUNS.variables },
      );
    },
    TIMEOUT,
  );

  it(
    `arbitrary cursors (${RUNS.cursors * BATCH} inputs): 200 or 422 invalid_request naming cursor`,
    async () => {
      const json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const cursor = fc.oneof(
        fc.string(),
        fc.string({ unit: 'binary' }),
        fc.base64String(),
        fc.jsonValue().map(json),
        fc
          .tuple(
            fc.oneof(fc.integer(), fc.double(), fc.constantFrom(8.64e15 + 1, -8.64e15 - 1, 2 ** 53)),
            fc.oneof(fc.uuid(), fc.string()),
            fc.oneof(fc.string(), fc.base64String({ maxLength: 12 })),
          )
          .map(json),
        // A real cursor with one character changed, truncated or extended.
        fc.tuple(fc.nat(), fc.constantFrom('A', '-', '_', '=', '.', '\u0000', '😀', '')).map(([i, c]) => {
          const at = i % validCursor.length;
          return validCursor.slice(0, at) + c + validCursor.slice(at + 1);
        }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(cursor, { minLength: BATCH, maxLength: BATCH }), (cursors) =>
          batch(
            cursors,
            (c) => call(JSON.stringify({ operationId: 'listNotifications', variables: { cursor: c, limit: 3 } })),
            (c, result) => {
              const where = `${JSON.stringify(c)} → ${result.text.slice(0, 300)}`;
              expect([200, 422], where).toContain(result.status);
              if (result.status === 422 && !c.includes('\u0000')) expect(cursorNamed(result), where).toBe(true);
            },
          ),
        ),
        { ...LIMITS, numRuns: RUNS.cursors },
      );
    },
    TIMEOUT,
  );

  it(
    `re-encoded cursors of this feed with an out-of-range or non-integer time, or a non-UUID id (${RUNS.cursors * BATCH} inputs): always 422 naming cursor`,
    async () => {
      const [, realId, tag] = JSON.parse(Buffer.from(validCursor, 'base64url').toString('utf8'));
      const earliest = Date.parse('0001-01-01T00:00:00.000Z');
      const latest = Date.parse('9999-12-31T23:59:59.999Z');
      const storable = (n: number) => Number.isSafeInteger(n) && n >= earliest && n <= latest;
      // JSON texts, so that numbers JSON.stringify cannot write (1e400, 1E20, -0.0000001) are sent too.
      const badTime = fc.oneof(
        fc
          .maxSafeInteger()
          .filter((n) => !storable(n))
          .map(String),
        fc.constantFrom(8.64e15, -8.64e15, 1e15, -1e15, latest + 1, earliest - 1, 2 ** 53, -(2 ** 53), 1e308, -1e308).map(String),
        fc
          .double()
          .filter((n) => !storable(n))
          .map((n) => JSON.stringify(n)),
        fc.constantFrom('1e400', '-1e400', '1E20', '8640000000000001', '0.5', '-0.0000001', '253402300800000'),
        fc
          .oneof(fc.string(), fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '0'), fc.constantFrom(null, true, [], {}, [0]))
          .map((v) => JSON.stringify(v)),
      );
      const goodTime = fc.integer({ min: earliest, max: latest }).map(String);
      const badId = fc
        .oneof(
          fc.string().filter((s) => !UUID.test(s)),
          fc.integer(),
          fc.double(),
          fc.constant(null),
        )
        .map((v) => JSON.stringify(v));
      const anyId = fc.oneof(
        fc.constant(JSON.stringify(realId)),
        fc.uuid().map((u) => JSON.stringify(u)),
        badId,
      );
      const reencoded = fc
        .oneof(fc.tuple(badTime, anyId), fc.tuple(fc.oneof(goodTime, badTime), badId))
        .map(([time, id]) => Buffer.from(`[${time},${id},${JSON.stringify(tag)}]`).toString('base64url'));
      await fc.assert(
        fc.asyncProperty(fc.array(reencoded, { minLength: BATCH, maxLength: BATCH }), (cursors) =>
          batch(
            cursors,
            (c) => call(JSON.stringify({ operationId: 'listNotifications', variables: { cursor: c, limit: 3 } })),
            (c, result) => {
              const where = `${Buffer.from(c, 'base64url').toString('utf8')} → ${result.text.slice(0, 300)}`;
              expect(result.status, where).toBe(422);
              expect(cursorNamed(result), where).toBe(true);
            },
          ),
        ),
        { ...LIMITS, numRuns: RUNS.cursors },
      );
    },
    TIMEOUT,
  );

  it(
    `arbitrary Authorization, Content-Type and X-Request-Id headers (${RUNS.headers * BATCH} inputs)`,
    async () => {
      // fetch only sends header values made of bytes 0x20–0xFF (and tab); the raw-socket property below covers the rest.
      const headerText = fc.string({
        unit: fc
          .integer({ min: 0x20, max: 0xff })
          .filter((c) => c !== 0x7f)
          .map((c) => String.fromCharCode(c)),
        maxLength: 80,
      });
      const base62 = fc.string({
        unit: fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'),
        minLength: 40,
        maxLength: 40,
      });
      const authorization = fc.oneof(
        fc.constantFrom(
          'KEY',
          'bearer KEY',
          'BEARER KEY',
          'Bearer   KEY',
          'Bearer KEYx',
          'Bearer KEY KEY',
          'Basic KEY',
          'Bearer',
          'Bearer ',
          '',
          'PLATFORM',
          'Bearer PLATFORM',
        ),
        base62.map((s) => `Bearer gk_${s}`),
        base62.map((s) => `Bearer stk_${s}`),
        headerText,
        headerText.map((s) => `Bearer ${s}`),
      );
      const contentType = fc.oneof(
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/json; charset=utf-16',
          'application/graphql',
          '*/*',
          '',
        ),
        headerText,
      );
      const requestId = fc.oneof(fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/), fc.stringMatching(/^[A-Za-z0-9._-]{65,70}$/), headerText);
      const headers = fc.record({
        authorization,
        contentType,
        requestId,
        body: fc.constantFrom('{"operationId":"getNotificationCounts"}', '{"operationId":"listNotifications","variables":{"limit":1}}'),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(headers, { minLength: BATCH, maxLength: BATCH }), (inputs) =>
          batch(
            inputs,
            (h) => {
              const auth = h.authorization.replace(/PLATFORM/g, service.platformToken).replace(/KEY/g, user.key);
              return service.request('/api/v1/call', {
                method: 'POST',
                headers: { authorization: auth, 'content-type': h.contentType, 'x-request-id': h.requestId },
                body: h.body,
              });
            },
            (h, result) => {
              const where = `${JSON.stringify(h)} → ${result.status} ${result.text.slice(0, 200)}`;
              // The request id is echoed when it is a plain token, else replaced by a fresh UUID.
              const given = h.requestId.replace(/^[ \t]+|[ \t]+$/g, '');
              expect(result.headers.get('x-request-id'), where).toEqual(REQUEST_ID.test(given) ? given : expect.stringMatching(UUID));
              // The credential is checked before the body: anything but `Bearer <the key>` (any case, any spaces) is 401.
              if (!/^bearer +KEY$/i.test(h.authorization)) expect(result.status, where).toBe(401);
              // A JSON content type (parameters allowed) with a valid body succeeds; any other is 415.
              else if (/^application\/json[ \t]*(;|$)/i.test(h.contentType.trim())) expect(result.status, where).toBe(200);
              else expect(result.status, where).toBe(415);
              expect(result.headers.get('x-ratelimit-limit'), where).toBeTruthy();
            },
          ),
        ),
        { ...LIMITS, numRuns: RUNS.headers },
      );
    },
    TIMEOUT,
  );

  it(
    `raw bytes as the body, and invalid UTF-8 inside JSON strings (${RUNS.rawBytes * BATCH} + ${RUNS.invalidUtf8 * BATCH} inputs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 400 }), { minLength: BATCH, maxLength: BATCH }), (bodies) =>
          batch(bodies, (b) => call(Buffer.from(b))),
        ),
        { ...LIMITS, numRuns: RUNS.rawBytes },
      );
      // Bytes that are not UTF-8 (lone continuation bytes, overlongs, surrogates encoded, 0xFF) in a string value.
      const badBytes = fc.array(
        fc.oneof(
          fc.integer({ min: 0x80, max: 0xff }),
          fc.constantFrom(0xc0, 0xc1, 0xf5, 0xff, 0xed, 0xa0, 0x80),
          fc.integer({ min: 0x20, max: 0x7e }).filter((b) => b !== 0x22 && b !== 0x5c),
        ),
        { minLength: 1, maxLength: 40 },
      );
      const field = fc.constantFrom('searchTerm', 'notificationTypeFilter', 'cursor');
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(field, badBytes), { minLength: BATCH, maxLength: BATCH }), (inputs) =>
          batch(
            inputs,
            ([name, bytes]) =>
              call(
                Buffer.concat([
                  Buffer.from(`{"operationId":"listNotifications","variables":{"${name}":"`),
                  Buffer.from(bytes),
                  Buffer.from('"}}'),
                ]),
              ),
            ([name], result) => expect([200, 422], `${name} → ${result.text.slice(0, 200)}`).toContain(result.status),
          ),
        ),
        { ...LIMITS, numRuns: RUNS.invalidUtf8 },
      );
    },
    TIMEOUT,
  );

  it(
    `header bytes fetch refuses to send (control characters, DEL, NUL) over a raw socket (${RUNS.rawHeaders} inputs): a contract error, not the host's default 400 body`,
    async () => {
      const value = fc
        .uint8Array({ minLength: 1, maxLength: 30 })
        .map((bytes) => Buffer.from(bytes.filter((b) => b !== 0x0d && b !== 0x0a)));
      const body = '{"operationId":"getNotificationCounts"}';
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('Authorization', 'Content-Type', 'X-Request-Id', 'X-Anything'), value, async (name, bytes) => {
          const headers = name === 'Authorization' ? '' : `Authorization: Bearer ${user.key}\r\n`;
          const head = Buffer.from(
            `POST /api/v1/call HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: ${body.length}\r\n${headers}${name}: `,
          );
          const result = await rawRequest(Buffer.concat([head, bytes, Buffer.from(`\r\n\r\n${body}`)]));
          expectContractResponse(result, { name, bytes: bytes.toString('hex') });
          await expectHealthy();
        }),
        { ...LIMITS, numRuns: RUNS.rawHeaders },
      );
    },
    TIMEOUT,
  );

  it(
    `deeply nested JSON bodies, with and without U+0000 at the bottom, on all three POST routes (${RUNS.nesting * 3} inputs)`,
    async () => {
      const bearers = { '/api/v1/call': () => user.key, '/api/v1/skiptrace': () => skipTraceKey, '/graphql': () => user.key };
      const input = fc.record({
        path: fc.constantFrom(...(Object.keys(bearers) as Array<keyof typeof bearers>)),
        depth: fc.integer({ min: 1, max: 30_000 }),
        leaf: fc.constantFrom('"\\u0000"', '"x"', '{}', 'null'),
        container: fc.constantFrom('array', 'object'),
      });
      await fc.assert(
        fc.asyncProperty(input, async ({ path, depth, leaf, container }) => {
          const [open, close] = container === 'array' ? ['[', ']'] : ['{"a":', '}'];
          const nested = open.repeat(depth) + leaf + close.repeat(depth);
          const body = {
            '/graphql': `{"query":"{ __typename }","variables":{"v":${nested}}}`,
            '/api/v1/call': `{"operationId":"listNotifications","variables":{"searchTerm":${nested}}}`,
            '/api/v1/skiptrace': `{"address":{"line1":${nested},"city":"Austin","state":"TX","zip":"78701"}}`,
          }[path];
          const result = await service.request(path, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${bearers[path]()}` },
            body,
          });
          const where = `${path} depth ${depth} ${container} of ${leaf} → ${result.status} ${result.text.slice(0, 200)}`;
          expect(result.status, where).toBeLessThan(500);
          if (path === '/graphql') expect(result.body?.errors?.[0]?.extensions?.code ?? 'none', where).not.toBe('INTERNAL');
          else expect(result.body?.error?.code, where).toBeDefined();
          expect((await service.request('/healthz')).status).toBe(200);
        }),
        {
          ...LIMITS,
          numRuns: RUNS.nesting * 3,
          examples: [[{ path: '/api/v1/call', depth: 20_000, leaf: '"\\u0000"', container: 'array' }]],
        },
      );
    },
    TIMEOUT,
  );

  it('answers requests the HTTP parser refuses (malformed request line, over-long URL or header) in the contract shape', async () => {
    const requests = {
      malformedRequestLine: 'GARBAGE\r\n\r\n',
      overLongUrl: `GET /graphql?query=${'x'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`,
      overLongHeader: `POST /api/v1/call HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Padding: ${'p'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\n{}`,
    };
    for (const [name, request] of Object.entries(requests)) {
      const result = await rawRequest(Buffer.from(request, 'latin1'));
      expectContractResponse(result, name);
    }
    await expectHealthy();
  });
});
