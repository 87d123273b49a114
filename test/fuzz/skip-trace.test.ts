/**
 * Property-based fuzzing of `POST /api/v1/skiptrace` over real HTTP (fast-check): arbitrary
 * bodies, raw bytes, and mutations of a valid body (wrong types per field, extra fields, unicode,
 * control characters, U+0000, strings around the 200-character limits). Whatever comes in:
 *   - the status is never 5xx, and with a valid key, credits and the feature on it is 200, 413 or 422;
 *   - every error is `{"error": {code, message, details?}}` with a contract code whose status matches;
 *   - every 200 is a trace result, and exactly one credit is charged per 200, none per error;
 *   - the process stays up (`/healthz` after every batch).
 *
 * `FUZZ_SCALE=10 npx vitest run test/fuzz` multiplies every run count.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type HttpResult, type TestService } from '../support/harness.js';
import { REST_STATUS } from '../support/contract.js';
import { uniqueStreet } from '../support/billing.js';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const BATCH = 4;
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const TIMEOUT = 120_000 * Math.max(1, SCALE);
/** Bounds a run, shrinking included, so a failure is reported (with the smallest input found so far) rather than timing out. */
const LIMITS = { interruptAfterTimeLimit: 60_000 * Math.max(1, SCALE), markInterruptAsFailure: true };
const RUNS = { json: runs(80), anything: runs(60), mutations: runs(180), rawBytes: runs(60) };
const CREDITS = 1_000_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

let service: TestService;
let organizationId: string;
let key: string;
let street: string;
const counts = { requests: 0, ok: 0, byStatus: {} as Record<number, number> };

async function gql(query: string, variables: Record<string, unknown>) {
  const result = await service.graphql(query, variables);
  if (!result.body.data || result.body.errors) throw new Error(JSON.stringify(result.body.errors));
  return result.body.data;
}

const balance = async () =>
  (await gql(`query($id: ID!) { organization(id: $id) { skipTraceCredits } }`, { id: organizationId })).organization
    .skipTraceCredits as number;

beforeAll(async () => {
  service = await startService({
    GATEWAY_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_MAX_IN_FLIGHT: '1000',
  });
  organizationId = (await gql(`mutation($name: String!) { createOrganization(name: $name) { id } }`, { name: `Fuzz ${randomUUID()}` }))
    .createOrganization.id;
  await gql(
    `mutation($org: ID!, $amount: Int!, $ref: String!) { addSkipTraceCredits(organizationId: $org, amount: $amount, reference: $ref) { id } }`,
    { org: organizationId, amount: CREDITS, ref: randomUUID() },
  );
  key = (await gql(`mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { secret } }`, { org: organizationId }))
    .generateSkipTraceKey.secret;
  // A street no other run uses, so the records (and the 90-day result cache) are this run's.
  street = uniqueStreet();
  await gql(`mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`, {
    input: [
      {
        address: { line1: `12 ${street} Road`, line2: 'Unit 3', city: 'Austin', state: 'TX', zip: '78701' },
        owners: [
          {
            type: 'person',
            firstName: 'Ann',
            lastName: 'Lee',
            phones: [{ number: '5125550199', type: 'mobile' }],
            emails: ['ann@example.com'],
          },
          { type: 'entity', name: 'Lee Holdings LLC', persons: [{ firstName: 'Bo', lastName: 'Lee' }] },
        ],
      },
    ],
  });
});
afterAll(async () => {
  console.info(`skip trace fuzz: ${counts.requests} requests, ${counts.ok} traces (200), by status ${JSON.stringify(counts.byStatus)}`);
  await service?.close();
});

function expectContractResponse(result: HttpResult, context: unknown) {
  counts.requests++;
  counts.byStatus[result.status] = (counts.byStatus[result.status] ?? 0) + 1;
  const where = `for ${JSON.stringify(context)?.slice(0, 600)} → ${result.status} ${result.text.slice(0, 400)}`;
  expect(result.status, where).toBeLessThan(500);
  // Valid key, plenty of credits, feature on, limits raised: only these outcomes are possible.
  expect([200, 413, 422], where).toContain(result.status);
  expect(result.headers.get('x-request-id'), where).toBeTruthy();
  expect(result.headers.get('x-ratelimit-limit'), where).toBeTruthy();
  if (result.status === 200) {
    counts.ok++;
    expect(result.body.id, where).toMatch(UUID);
    expect(['records_found', 'no_records_found'], where).toContain(result.body.status);
    expect(Array.isArray(result.body.persons), where).toBe(true);
    return;
  }
  const error = result.body?.error;
  expect(error && typeof error === 'object', where).toBe(true);
  expect(REST_STATUS[error.code], where).toBe(result.status);
  expect(typeof error.message === 'string' && error.message.length > 0, where).toBe(true);
  if (error.details !== undefined) {
    expect(Array.isArray(error.details) && error.details.length > 0, where).toBe(true);
    for (const d of error.details) expect(typeof d.path === 'string' && typeof d.message === 'string', where).toBe(true);
  }
  expect(result.text, where).not.toMatch(/node_modules|\.ts:\d+|\.js:\d+|SELECT |select .* from /);
}

const trace = (body: string | Buffer) =>
  service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: typeof body === 'string' ? body : Uint8Array.from(body),
  });

async function batch<T>(inputs: T[], send: (input: T) => Promise<HttpResult>) {
  const results = await Promise.all(inputs.map(send));
  results.forEach((result, i) => expectContractResponse(result, inputs[i]));
  expect((await service.request('/healthz')).status).toBe(200);
}

// ---------------------------------------------------------------------------
// Mutations of a valid body

const nastyChar = fc.constantFrom(
  '%',
  '_',
  '\\',
  "'",
  '"',
  ';',
  '#',
  ',',
  '.',
  '-',
  '/',
  '\u0001',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u202e',
  '\ufeff',
  '\ud800',
  '\udfff',
  '😀',
  'é',
  'ß',
  'İ',
  'Ⅻ',
  '１',
  ' ',
  '\t',
  '\n',
);
/** Code points, and UTF-16 units, around the 200-character limit of line1 and city. */
const nearLimit = fc
  .tuple(fc.integer({ min: 195, max: 205 }), fc.constantFrom('a', 'é', '😀', ' ', '9'))
  .map(([n, c]) => (c === ' ' ? `1${' '.repeat(n - 2)}x` : c.repeat(n)));
const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: nastyChar, maxLength: 30 }),
  nearLimit,
  fc.integer({ min: 64 * 1024 - 200, max: 64 * 1024 + 10 }).map((n) => 'z'.repeat(n)),
  fc.constantFrom(
    '',
    ' ',
    '   ',
    '\u0000',
    'a\u0000',
    '\t\n',
    'null',
    '0',
    '[]',
    '{}',
    "' or 1=1 --",
    "'; drop table skip_trace_requests; --",
    'TX',
    'tx',
    'ZZ',
    'T',
    'TEX',
    '78701',
    '78701-1234',
    '787011234',
    '7870',
    '78701-',
    '78701-12345',
    '٧٨٧٠١',
    '７８７０１',
    'person',
    'entity',
    'PERSON',
  ),
);
const weirdValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    weirdString,
    fc.integer(),
    fc.constantFrom(0, -1, 78701, 1.5, 1e308, 2 ** 53, -0, true, false, null),
    fc.double(),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('line1', 'city', 'state', 'zip', 'type', 'name', '__proto__')), tie('value'), {
      maxKeys: 3,
    }),
  ),
})).value;

const PATHS = [
  'address',
  'address.line1',
  'address.line2',
  'address.city',
  'address.state',
  'address.zip',
  'actor',
  'actor.type',
  'actor.firstName',
  'actor.lastName',
  'actor.name',
  'propertyId',
  'extra',
  'address.extra',
  'address.propertyId',
  'actor.extra',
] as const;
const DELETE = Symbol('delete');
const mutation = fc.tuple(
  fc.constantFrom(...PATHS),
  fc.oneof({ weight: 1, arbitrary: fc.constant<typeof DELETE>(DELETE) }, { weight: 6, arbitrary: weirdValue }),
);

const baseBody = fc.constantFrom<Record<string, unknown>>(
  { address: { line1: 'LINE1', city: 'Austin', state: 'TX', zip: '78701' } },
  { address: { line1: 'LINE1', line2: 'Unit 3', city: 'austin', state: 'tx', zip: '78701-0000' } },
  { address: { line1: 'LINE1', city: 'Austin', state: 'TX', zip: '78701' }, actor: { type: 'person', firstName: 'Ann', lastName: 'Lee' } },
  { address: { line1: 'LINE1', city: 'Austin', state: 'TX', zip: '78701' }, actor: { type: 'entity', name: 'Lee Holdings, L.L.C.' } },
);

function mutate(base: Record<string, unknown>, mutations: Array<[string, unknown]>): Record<string, unknown> {
  const body = structuredClone(base);
  (body.address as Record<string, unknown>).line1 = `12 ${street} Road`;
  for (const [path, value] of mutations) {
    const parts = path.split('.');
    let target = body as Record<string, unknown>;
    for (const part of parts.slice(0, -1)) {
      if (typeof target[part] !== 'object' || target[part] === null || Array.isArray(target[part])) target[part] = {};
      target = target[part] as Record<string, unknown>;
    }
    const last = parts[parts.length - 1];
    if (value === DELETE) delete target[last];
    else Object.defineProperty(target, last, { value, enumerable: true, configurable: true, writable: true });
  }
  return body;
}

// ---------------------------------------------------------------------------

describe('POST /api/v1/skiptrace under fuzzing', () => {
  it(
    `mutations of a valid body (${RUNS.mutations * BATCH} inputs), charging exactly one credit per 200`,
    async () => {
      const before = await balance();
      const okBefore = counts.ok;
      const body = fc
        .tuple(baseBody, fc.array(mutation, { minLength: 0, maxLength: 3 }))
        .map(([base, mutations]) => mutate(base, mutations));
      await fc.assert(
        fc.asyncProperty(fc.array(body, { minLength: BATCH, maxLength: BATCH }), (bodies) =>
          batch(bodies, (b) => trace(JSON.stringify(b))),
        ),
        {
          ...LIMITS,
          numRuns: RUNS.mutations,
        },
      );
      const traced = counts.ok - okBefore;
      expect(traced).toBeGreaterThan(0);
      expect(await balance()).toBe(before - traced);
    },
    TIMEOUT,
  );

  it(
    `arbitrary JSON texts and serialized JavaScript values as the body (${RUNS.json * BATCH} + ${RUNS.anything * BATCH} inputs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.json(), { minLength: BATCH, maxLength: BATCH }), (bodies) => batch(bodies, trace)),
        { ...LIMITS, numRuns: RUNS.json },
      );
      await fc.assert(
        fc.asyncProperty(fc.array(fc.anything({ maxDepth: 3 }), { minLength: BATCH, maxLength: BATCH }), (values) =>
          batch(values, (v) => trace(JSON.stringify(v) ?? '')),
        ),
        { ...LIMITS, numRuns: RUNS.anything },
      );
    },
    TIMEOUT,
  );

  it(
    `raw bytes, and invalid UTF-8 inside a valid body's strings (${RUNS.rawBytes * BATCH} + ${RUNS.rawBytes * BATCH} inputs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.uint8Array({ maxLength: 400 }), { minLength: BATCH, maxLength: BATCH }), (bodies) =>
          batch(bodies, (b) => trace(Buffer.from(b))),
        ),
        {
          ...LIMITS,
          numRuns: RUNS.rawBytes,
        },
      );
      const badBytes = fc.array(
        fc.oneof(
          fc.integer({ min: 0x80, max: 0xff }),
          fc.integer({ min: 0x20, max: 0x7e }).filter((b) => b !== 0x22 && b !== 0x5c),
        ),
        { minLength: 1, maxLength: 40 },
      );
      const field = fc.constantFrom('line1', 'city', 'state', 'zip', 'line2');
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(field, badBytes), { minLength: BATCH, maxLength: BATCH }), (inputs) =>
          batch(inputs, ([name, bytes]) => {
            const address: Record<string, string> = { line1: `12 ${street} Road`, city: 'Austin', state: 'TX', zip: '78701', [name]: '@@' };
            const [head, tail] = JSON.stringify({ address }).split('@@');
            return trace(Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]));
          }),
        ),
        { ...LIMITS, numRuns: RUNS.rawBytes },
      );
    },
    TIMEOUT,
  );

  it('every charge has a ledger row, and the balance never went below zero', async () => {
    const [{ charges }] = await service.sql<{ charges: number }>(
      `select count(*)::int as charges from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
      [organizationId],
    );
    expect(charges).toBe(counts.ok);
    expect(await balance()).toBe(CREDITS - counts.ok);
  });
});
