/**
 * Black-box tests of the skip trace half over HTTP: key lifecycle, credits, the REST route
 * (`POST /api/v1/skiptrace`: auth, validation, order of checks, outcomes, charges, audit, rate
 * window) and the `skipTrace` GraphQL mutation. Records provider (the default) throughout.
 *
 * Every fixture address gets a street name unique to the run, because with DATABASE_URL the
 * database (property records and the 90-day result cache) outlives the run and is shared with
 * other test files.
 */
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type HttpResult, type TestService } from '../support/harness.js';
import { uniqueStreet } from '../support/billing.js';

// ---------------------------------------------------------------------------
// Helpers

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ORG_FIELDS = `id name skipTraceEnabled skipTraceCredits skipTraceKey { id hint createdAt }`;
const ISSUED_FIELDS = `id secret hint createdAt`;
const TRACE_FIELDS = `id status persons { firstName lastName middleName age phones { number type } emails }`;

type Body = { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };

async function gql(service: TestService, query: string, variables: Record<string, unknown> = {}, bearer?: string): Promise<Body> {
  return (await service.graphql(query, variables, bearer)).body as Body;
}

/** The data of a GraphQL call that must succeed. */
async function gqlData(service: TestService, query: string, variables: Record<string, unknown> = {}, bearer?: string): Promise<any> {
  const body = await gql(service, query, variables, bearer);
  if (!body.data || body.errors?.length) throw new Error(`GraphQL failed: ${JSON.stringify(body.errors)}`);
  return body.data;
}

const errorCode = (body: Body) => body.errors?.[0]?.extensions?.code;

async function createOrganization(service: TestService, enabled = true): Promise<string> {
  const data = await gqlData(
    service,
    `mutation($name: String!, $enabled: Boolean!) { createOrganization(name: $name, skipTraceEnabled: $enabled) { id } }`,
    {
      name: `Skip trace org ${randomUUID()}`,
      enabled,
    },
  );
  return data.createOrganization.id;
}

async function addCredits(service: TestService, organizationId: string, amount: number, reference: string = randomUUID()): Promise<Body> {
  return gql(
    service,
    `mutation($org: ID!, $amount: Int!, $ref: String!) { addSkipTraceCredits(organizationId: $org, amount: $amount, reference: $ref) { ${ORG_FIELDS} } }`,
    {
      org: organizationId,
      amount,
      ref: reference,
    },
  );
}

const keyMutation = (name: 'generateSkipTraceKey' | 'rotateSkipTraceKey') =>
  `mutation($org: ID!) { ${name}(organizationId: $org) { ${ISSUED_FIELDS} } }`;
const REVOKE = `mutation($org: ID!) { revokeSkipTraceKey(organizationId: $org) }`;

async function generateKey(
  service: TestService,
  organizationId: string,
): Promise<{ id: string; secret: string; hint: string; createdAt: string }> {
  return (await gqlData(service, keyMutation('generateSkipTraceKey'), { org: organizationId })).generateSkipTraceKey;
}

async function organization(service: TestService, organizationId: string): Promise<any> {
  return (await gqlData(service, `query($id: ID!) { organization(id: $id) { ${ORG_FIELDS} } }`, { id: organizationId })).organization;
}

async function balance(service: TestService, organizationId: string): Promise<number> {
  return (await organization(service, organizationId)).skipTraceCredits;
}

interface Org {
  organizationId: string;
  key: string;
  keyId: string;
}

/** createOrganization + addSkipTraceCredits + generateSkipTraceKey. */
async function setupOrg(service: TestService, options: { credits?: number; enabled?: boolean } = {}): Promise<Org> {
  const organizationId = await createOrganization(service, options.enabled ?? true);
  if (options.credits) {
    const added = await addCredits(service, organizationId, options.credits);
    if (added.errors) throw new Error(JSON.stringify(added.errors));
  }
  const issued = await generateKey(service, organizationId);
  return { organizationId, key: issued.secret, keyId: issued.id };
}

/** `POST /api/v1/skiptrace`; a string body is sent as is, anything else as JSON. */
function trace(service: TestService, key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function expectError(result: HttpResult, status: number, code: string) {
  expect({ status: result.status, code: result.body?.error?.code }).toEqual({ status, code });
  expect(typeof result.body.error.message).toBe('string');
  expect(result.body.error.message.length).toBeGreaterThan(0);
}

/** The distinct detail paths of a 422, sorted. */
function detailPaths(result: HttpResult): string[] {
  expectError(result, 422, 'invalid_request');
  const details = result.body.error.details;
  expect(Array.isArray(details)).toBe(true);
  for (const d of details) {
    expect(typeof d.path).toBe('string');
    expect(typeof d.message).toBe('string');
  }
  return [...new Set<string>(details.map((d: { path: string }) => d.path))].sort();
}

const JANE = {
  firstName: 'Jane',
  lastName: 'Doe',
  middleName: 'Quinn',
  age: 42,
  phones: [
    { number: '5125550101', type: 'mobile' },
    { number: '5125550102', type: 'residential' },
  ],
  emails: ['jane.doe@example.com'],
};
const JOHN = {
  firstName: 'John',
  lastName: 'Roe',
  middleName: null,
  age: 51,
  phones: [{ number: '5125550103', type: 'mobile' }],
  emails: ['john@acme.example'],
};
const MARY = {
  firstName: 'Mary',
  lastName: 'Major',
  middleName: null,
  age: null,
  phones: [{ number: '5125550104', type: 'unknown' }],
  emails: [],
};

interface Fixture {
  street: string;
  /** `123 <Street> Street Apt 4, Austin, tx 78701` */
  address: { line1: string; city: string; state: string; zip: string };
  /** `123 <STREET> ST #4, AUSTIN, TX 78701-1234`: the same trace */
  upperAddress: { line1: string; city: string; state: string; zip: string };
}

/** Imports a property with a person owner (Jane Doe) and an entity owner (Acme Holdings LLC: John Roe, Mary Major). */
async function importFixture(service: TestService): Promise<Fixture> {
  const street = uniqueStreet();
  const data = await gqlData(service, `mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`, {
    input: [
      {
        address: { line1: `123 ${street} Street`, line2: 'Apt 4', city: 'Austin', state: 'TX', zip: '78701' },
        owners: [
          {
            type: 'person',
            firstName: 'Jane',
            lastName: 'Doe',
            middleName: 'Quinn',
            age: 42,
            phones: [
              { number: '(512) 555-0101', type: 'mobile' },
              { number: '+1 512-555-0102', type: 'residential' },
            ],
            emails: ['jane.doe@example.com'],
          },
          {
            type: 'entity',
            name: 'Acme Holdings LLC',
            persons: [
              {
                firstName: 'John',
                lastName: 'Roe',
                age: 51,
                phones: [{ number: '512.555.0103', type: 'mobile' }],
                emails: ['john@acme.example'],
              },
              { firstName: 'Mary', lastName: 'Major', phones: [{ number: '5125550104' }] },
            ],
          },
        ],
      },
    ],
  });
  expect(data.importPropertyRecords.imported).toBe(1);
  return {
    street,
    address: { line1: `123 ${street} Street Apt 4`, city: 'Austin', state: 'tx', zip: '78701' },
    upperAddress: { line1: `123 ${street.toUpperCase()} ST #4`, city: 'AUSTIN', state: 'TX', zip: '78701-1234' },
  };
}

/** An address that has no property record. */
const unknownAddress = () => ({ line1: `9 ${uniqueStreet()} Road`, city: 'Austin', state: 'TX', zip: '78702' });

async function chargeRows(service: TestService, organizationId: string): Promise<Array<{ request_id: string; amount: number }>> {
  return service.sql(
    `select request_id::text as request_id, amount from skip_trace_credit_ledger where organization_id = ? and kind = 'charge'`,
    [organizationId],
  );
}

async function auditRows(
  service: TestService,
  keyId: string,
): Promise<Array<{ id: string; outcome: string; charged: boolean; duration_ms: number; key_id: string; organization_id: string }>> {
  return service.sql(
    `select id::text as id, outcome, charged, duration_ms, key_id::text as key_id, organization_id::text as organization_id
       from skip_trace_requests where key_id = ? order by created_at`,
    [keyId],
  );
}

/**
 * The audit rows of a key, waiting (up to 3 s) until there are at least `atLeast`: a row for a call
 * refused before the trace ran may be written just after its response.
 */
async function auditRowsEventually(service: TestService, keyId: string, atLeast: number) {
  const deadline = Date.now() + 3000;
  let rows = await auditRows(service, keyId);
  while (rows.length < atLeast && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    rows = await auditRows(service, keyId);
  }
  return rows;
}

// ---------------------------------------------------------------------------

let service: TestService;
let fixture: Fixture;
beforeAll(async () => {
  // The in-flight limit is raised so that the 200-trace race below is limited by credits only
  // (nothing else here depends on the default of 10).
  service = await startService({ SKIPTRACE_MAX_IN_FLIGHT: '1000' });
  fixture = await importFixture(service);
});
afterAll(() => service?.close());

describe('skip trace keys', () => {
  it('issues stk_ + 40 base62 characters with a first-8…last-4 hint, and stores only its SHA-256', async () => {
    const organizationId = await createOrganization(service);
    const issued = await generateKey(service, organizationId);
    expect(issued.secret).toMatch(/^stk_[0-9A-Za-z]{40}$/);
    expect(issued.hint).toBe(`${issued.secret.slice(0, 8)}…${issued.secret.slice(-4)}`);
    expect(issued.id).toMatch(UUID);

    const rows = await service.sql(`select key_hash, hint, revoked_at from skip_trace_keys where id = ?`, [issued.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].key_hash).toBe(createHash('sha256').update(issued.secret).digest('hex'));
    expect(rows[0].hint).toBe(issued.hint);
    expect(rows[0].revoked_at).toBeNull();
    const dump = await service.sql(`select row_to_json(k)::text as json from skip_trace_keys k where organization_id = ?`, [
      organizationId,
    ]);
    expect(dump.map((r) => r.json).join('\n')).not.toContain(issued.secret.slice(4));
  });

  it('refuses a second generate while a key is active with CONFLICT, keeping the first key', async () => {
    const org = await setupOrg(service, { credits: 1 });
    const second = await gql(service, keyMutation('generateSkipTraceKey'), { org: org.organizationId });
    expect(errorCode(second)).toBe('CONFLICT');
    expect((await organization(service, org.organizationId)).skipTraceKey.id).toBe(org.keyId);
    expect((await trace(service, org.key, { address: fixture.address })).status).toBe(200);
  });

  it('shows the active key as Organization.skipTraceKey {id hint createdAt}, and null after revoke', async () => {
    const organizationId = await createOrganization(service);
    expect((await organization(service, organizationId)).skipTraceKey).toBeNull();
    const issued = await generateKey(service, organizationId);
    const shown = (await organization(service, organizationId)).skipTraceKey;
    expect(shown).toEqual({ id: issued.id, hint: issued.hint, createdAt: issued.createdAt });
    expect(Number.isNaN(Date.parse(shown.createdAt))).toBe(false);
    expect(JSON.stringify(await organization(service, organizationId))).not.toContain(issued.secret);

    expect((await gqlData(service, REVOKE, { org: organizationId })).revokeSkipTraceKey).toBe(true);
    expect((await organization(service, organizationId)).skipTraceKey).toBeNull();
  });

  it('rotates: the old key gets 401 invalid_key on the very next request and the new key works', async () => {
    const org = await setupOrg(service, { credits: 5 });
    expect((await trace(service, org.key, { address: fixture.address })).status).toBe(200);

    const rotated = (await gqlData(service, keyMutation('rotateSkipTraceKey'), { org: org.organizationId })).rotateSkipTraceKey;
    expect(rotated.secret).toMatch(/^stk_[0-9A-Za-z]{40}$/);
    expect(rotated.secret).not.toBe(org.key);
    expect(rotated.id).not.toBe(org.keyId);

    expectError(await trace(service, org.key, { address: fixture.address }), 401, 'invalid_key');
    const fresh = await trace(service, rotated.secret, { address: fixture.address });
    expect(fresh.status).toBe(200);
    expect((await organization(service, org.organizationId)).skipTraceKey).toEqual({
      id: rotated.id,
      hint: rotated.hint,
      createdAt: rotated.createdAt,
    });
    const [old] = await service.sql(`select revoked_at from skip_trace_keys where id = ?`, [org.keyId]);
    expect(old.revoked_at).not.toBeNull();
    // Two traces were charged, the refused one was not.
    expect(await balance(service, org.organizationId)).toBe(3);
  });

  it('revokes: the key is refused with 401 invalid_key, and a new key can be generated afterwards', async () => {
    const org = await setupOrg(service, { credits: 5 });
    expect((await gqlData(service, REVOKE, { org: org.organizationId })).revokeSkipTraceKey).toBe(true);
    expectError(await trace(service, org.key, { address: fixture.address }), 401, 'invalid_key');
    const again = await generateKey(service, org.organizationId);
    expect((await trace(service, again.secret, { address: fixture.address })).status).toBe(200);
    expectError(await trace(service, org.key, { address: fixture.address }), 401, 'invalid_key');
  });

  it('answers NOT_FOUND to rotate and revoke when no key is active', async () => {
    const organizationId = await createOrganization(service);
    expect(errorCode(await gql(service, keyMutation('rotateSkipTraceKey'), { org: organizationId }))).toBe('NOT_FOUND');
    expect(errorCode(await gql(service, REVOKE, { org: organizationId }))).toBe('NOT_FOUND');
    await generateKey(service, organizationId);
    await gqlData(service, REVOKE, { org: organizationId });
    expect(errorCode(await gql(service, REVOKE, { org: organizationId }))).toBe('NOT_FOUND');
    expect(errorCode(await gql(service, keyMutation('rotateSkipTraceKey'), { org: organizationId }))).toBe('NOT_FOUND');
  });

  it('enforces one active key per organization in the database itself (unique violation on a direct insert)', async () => {
    const org = await setupOrg(service);
    const secret = `stk_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'a').slice(0, 40)}`;
    await expect(
      service.sql(`insert into skip_trace_keys (id, organization_id, key_hash, hint) values (?, ?, ?, ?)`, [
        randomUUID(),
        org.organizationId,
        createHash('sha256').update(secret).digest('hex'),
        'stk_xxxx…xxxx',
      ]),
    ).rejects.toThrow(/unique|duplicate|23505/i);
    const active = await service.sql(`select id from skip_trace_keys where organization_id = ? and revoked_at is null`, [
      org.organizationId,
    ]);
    expect(active.map((r) => r.id)).toEqual([org.keyId]);
  });

  it('lets an ADMIN-scoped key of an ADMIN of the organization generate, rotate and revoke', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['ADMIN'] });
    const generated = await gql(service, keyMutation('generateSkipTraceKey'), { org: admin.organizationId }, admin.key);
    expect(generated.data?.generateSkipTraceKey.secret).toMatch(/^stk_[0-9A-Za-z]{40}$/);
    const rotated = await gql(service, keyMutation('rotateSkipTraceKey'), { org: admin.organizationId }, admin.key);
    expect(rotated.data?.rotateSkipTraceKey.secret).toMatch(/^stk_[0-9A-Za-z]{40}$/);
    expect(rotated.data?.rotateSkipTraceKey.id).not.toBe(generated.data?.generateSkipTraceKey.id);
    const revoked = await gql(service, REVOKE, { org: admin.organizationId }, admin.key);
    expect(revoked.data?.revokeSkipTraceKey).toBe(true);
    expect((await organization(service, admin.organizationId)).skipTraceKey).toBeNull();
  });

  it('records who issued each key: platform, or the ADMIN-scoped gateway key, shown as createdBy', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['ADMIN'] });
    const createdBy = async (issued: { id: string }) =>
      (await service.sql(`select created_by from skip_trace_keys where id = ?`, [issued.id]))[0].created_by;
    const byPlatform = (
      await gqlData(service, `mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { id createdBy } }`, {
        org: admin.organizationId,
      })
    ).generateSkipTraceKey;
    expect(byPlatform.createdBy).toBe('platform');
    expect(await createdBy(byPlatform)).toBe('platform');
    const byAdmin = (
      await gqlData(
        service,
        `mutation($org: ID!) { rotateSkipTraceKey(organizationId: $org) { id createdBy } }`,
        { org: admin.organizationId },
        admin.key,
      )
    ).rotateSkipTraceKey;
    expect(byAdmin.createdBy).toBe(admin.keyId);
    expect(await createdBy(byAdmin)).toBe(admin.keyId);
    const shown = await gqlData(service, `query($id: ID!) { organization(id: $id) { skipTraceKey { id createdBy } } }`, {
      id: admin.organizationId,
    });
    expect(shown.organization.skipTraceKey).toEqual({ id: byAdmin.id, createdBy: admin.keyId });
  });

  it("answers FORBIDDEN to a MEMBER's key, an ADMIN of another organization, an ADMIN without ADMIN scope and an stk key, changing nothing", async () => {
    const org = await setupOrg(service);
    const member = await service.provision({ role: 'MEMBER', scopes: ['READ', 'WRITE'], organizationId: org.organizationId });
    const foreignAdmin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    const unscopedAdmin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE'], organizationId: org.organizationId });
    for (const bearer of [member.key, foreignAdmin.key, unscopedAdmin.key, org.key]) {
      for (const mutation of [keyMutation('generateSkipTraceKey'), keyMutation('rotateSkipTraceKey'), REVOKE]) {
        const result = await gql(service, mutation, { org: org.organizationId }, bearer);
        expect({ mutation, code: errorCode(result) }).toEqual({ mutation, code: 'FORBIDDEN' });
      }
    }
    const active = await service.sql(`select id from skip_trace_keys where organization_id = ?`, [org.organizationId]);
    expect(active.map((r) => r.id)).toEqual([org.keyId]);
  });
});

describe('skip trace credits', () => {
  it('adds purchases to skipTraceCredits, starting from 0', async () => {
    const organizationId = await createOrganization(service);
    expect(await balance(service, organizationId)).toBe(0);
    const first = await addCredits(service, organizationId, 5, 'invoice-1');
    expect(first.data?.addSkipTraceCredits.skipTraceCredits).toBe(5);
    const second = await addCredits(service, organizationId, 7, 'invoice-2');
    expect(second.data?.addSkipTraceCredits.skipTraceCredits).toBe(12);
    expect(await balance(service, organizationId)).toBe(12);
  });

  it('applies a repeated reference once', async () => {
    const organizationId = await createOrganization(service);
    await addCredits(service, organizationId, 5, 'order-42');
    const repeat = await addCredits(service, organizationId, 5, 'order-42');
    expect(repeat.errors).toBeUndefined();
    expect(repeat.data?.addSkipTraceCredits.skipTraceCredits).toBe(5);
    // Another organization may use the same reference.
    const other = await createOrganization(service);
    expect((await addCredits(service, other, 3, 'order-42')).data?.addSkipTraceCredits.skipTraceCredits).toBe(3);
    const rows = await service.sql(`select amount from skip_trace_credit_ledger where organization_id = ? and kind = 'purchase'`, [
      organizationId,
    ]);
    expect(rows.map((r) => r.amount)).toEqual([5]);
  });

  it('applies a reference once when 10 identical calls race', async () => {
    const organizationId = await createOrganization(service);
    const results = await Promise.all(Array.from({ length: 10 }, () => addCredits(service, organizationId, 9, 'race-ref')));
    for (const r of results) expect(r.errors).toBeUndefined();
    expect(await balance(service, organizationId)).toBe(9);
    const rows = await service.sql(`select amount from skip_trace_credit_ledger where organization_id = ? and kind = 'purchase'`, [
      organizationId,
    ]);
    expect(rows.map((r) => r.amount)).toEqual([9]);
  });

  it('refuses a repeated reference with another amount (CONFLICT), changing nothing', async () => {
    const organizationId = await createOrganization(service);
    await addCredits(service, organizationId, 5, 'order-7');
    const other = await addCredits(service, organizationId, 6, 'order-7');
    expect(errorCode(other)).toBe('CONFLICT');
    expect(await balance(service, organizationId)).toBe(5);
    // The original amount is still a harmless repeat.
    expect((await addCredits(service, organizationId, 5, 'order-7')).data?.addSkipTraceCredits.skipTraceCredits).toBe(5);
    const rows = await service.sql(`select amount from skip_trace_credit_ledger where organization_id = ? and kind = 'purchase'`, [
      organizationId,
    ]);
    expect(rows.map((r) => r.amount)).toEqual([5]);
  });

  it('applies a reference once when 10 calls with different amounts race: the others are CONFLICT', async () => {
    const organizationId = await createOrganization(service);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => addCredits(service, organizationId, i + 1, 'race-amounts')));
    const applied = results.filter((r) => !r.errors);
    expect(applied).toHaveLength(1);
    expect(results.filter((r) => errorCode(r) === 'CONFLICT')).toHaveLength(9);
    expect(await balance(service, organizationId)).toBe(applied[0].data.addSkipTraceCredits.skipTraceCredits);
  });

  it('refuses a purchase that would take the balance past 2147483647 with BAD_USER_INPUT, applying nothing', async () => {
    const max = 2_147_483_647;
    const organizationId = await createOrganization(service);
    expect((await addCredits(service, organizationId, max - 10, 'bulk')).data?.addSkipTraceCredits.skipTraceCredits).toBe(max - 10);
    const over = await addCredits(service, organizationId, 11, 'one-too-many');
    expect(errorCode(over)).toBe('BAD_USER_INPUT');
    expect(errorCode(await addCredits(service, organizationId, max, 'huge'))).toBe('BAD_USER_INPUT');
    expect(await balance(service, organizationId)).toBe(max - 10);
    // Nothing was recorded for the refused purchases: the same reference applies once there is room.
    expect((await addCredits(service, organizationId, 10, 'fill')).data?.addSkipTraceCredits.skipTraceCredits).toBe(max);
    expect(errorCode(await addCredits(service, organizationId, 1, 'one-more'))).toBe('BAD_USER_INPUT');
    const rows = await service.sql(`select reference from skip_trace_credit_ledger where organization_id = ? order by created_at`, [
      organizationId,
    ]);
    expect(rows.map((r) => r.reference)).toEqual(['bulk', 'fill']);
  });

  it('never overflows when purchases near the limit race: 2 of 8 fit, the other 6 are BAD_USER_INPUT', async () => {
    const max = 2_147_483_647;
    const organizationId = await createOrganization(service);
    await addCredits(service, organizationId, max - 10, 'bulk');
    const results = await Promise.all(Array.from({ length: 8 }, () => addCredits(service, organizationId, 5)));
    expect(results.filter((r) => !r.errors)).toHaveLength(2);
    expect(results.filter((r) => r.errors).map(errorCode)).toEqual(Array(6).fill('BAD_USER_INPUT'));
    expect(await balance(service, organizationId)).toBe(max);
    const [ledger] = await service.sql(
      `select sum(amount)::bigint::text as total, count(*)::int as n from skip_trace_credit_ledger where organization_id = ?`,
      [organizationId],
    );
    expect(ledger).toEqual({ total: String(max), n: 3 });
  });

  it('refuses an amount of 0 or below with BAD_USER_INPUT, changing nothing', async () => {
    const organizationId = await createOrganization(service);
    await addCredits(service, organizationId, 2);
    for (const amount of [0, -1, -50]) {
      expect(errorCode(await addCredits(service, organizationId, amount))).toBe('BAD_USER_INPUT');
    }
    expect(await balance(service, organizationId)).toBe(2);
    const rows = await service.sql(`select count(*)::int as n from skip_trace_credit_ledger where organization_id = ?`, [organizationId]);
    expect(rows[0].n).toBe(1);
  });
});

describe('POST /api/v1/skiptrace: credentials', () => {
  let org: Org;
  beforeAll(async () => {
    org = await setupOrg(service, { credits: 5 });
  });

  const refused = async (authorization: string | null) => {
    const headers: Record<string, string> = authorization === null ? {} : { authorization };
    const result = await service.request('/api/v1/skiptrace', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ address: fixture.address }),
    });
    expectError(result, 401, 'invalid_key');
    expect(Object.keys(result.body)).toEqual(['error']);
    expect(Object.keys(result.body.error).sort()).toEqual(['code', 'message', 'requestId']);
    // The request id quoted in the body is the one in the X-Request-Id header.
    expect(result.body.error.requestId).toBe(result.headers.get('x-request-id'));
    return result;
  };

  it('answers 401 invalid_key with {error:{code,message}} to a missing or malformed credential', async () => {
    await refused(null);
    await refused('');
    await refused('Bearer');
    await refused('Bearer ');
    await refused('Bearer stk_short');
    await refused(`Bearer ${org.key}x`);
    await refused(`Bearer ${org.key.slice(0, -1)}!`);
    await refused(`Basic ${org.key}`);
    await refused(org.key);
  });

  it('answers 401 invalid_key to an unknown, well-formed stk_ key', async () => {
    await refused(`Bearer stk_${'A'.repeat(40)}`);
    await refused(`Bearer ${org.key.slice(0, -1)}${org.key.endsWith('a') ? 'b' : 'a'}`);
  });

  it('answers 401 invalid_key to a gateway gk_ key (even an ADMIN one) and to the platform token', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'], organizationId: org.organizationId });
    await refused(`Bearer ${admin.key}`);
    await refused(`Bearer ${service.platformToken}`);
  });

  it('charges nothing and accepts the valid key afterwards', async () => {
    expect(await balance(service, org.organizationId)).toBe(5);
    expect((await trace(service, org.key, { address: fixture.address })).status).toBe(200);
    expect(await balance(service, org.organizationId)).toBe(4);
  });
});

describe('POST /api/v1/skiptrace: validation', () => {
  let org: Org;
  beforeAll(async () => {
    org = await setupOrg(service, { credits: 100 });
  });
  const base = () => ({ line1: '1 Main St', city: 'Austin', state: 'TX', zip: '78701' });

  it('answers 422 invalid_request to malformed JSON, an array, a scalar, null and an empty body', async () => {
    for (const body of ['{"address": {', '[]', JSON.stringify([{ address: base() }]), '"hello"', '42', 'null', '']) {
      const result = await trace(service, org.key, body);
      expect({ body, status: result.status, code: result.body?.error?.code }).toEqual({ body, status: 422, code: 'invalid_request' });
    }
  });

  it('names address when it is missing or not an object', async () => {
    expect(detailPaths(await trace(service, org.key, {}))).toContain('address');
    expect(detailPaths(await trace(service, org.key, { address: 'Austin' }))).toContain('address');
    expect(detailPaths(await trace(service, org.key, { actor: { type: 'person' } }))).toEqual(['address']);
  });

  it('names each missing required address field', async () => {
    for (const field of ['line1', 'city', 'state', 'zip'] as const) {
      const address: Record<string, string> = base();
      delete address[field];
      expect(detailPaths(await trace(service, org.key, { address }))).toEqual([`address.${field}`]);
    }
  });

  it('refuses blank and over-long line1/city', async () => {
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), line1: '   ' } }))).toEqual(['address.line1']);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), line1: '' } }))).toEqual(['address.line1']);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), city: ' \t ' } }))).toEqual(['address.city']);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), line1: `1 ${'A'.repeat(199)}` } }))).toEqual([
      'address.line1',
    ]);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), city: 'B'.repeat(201) } }))).toEqual(['address.city']);
  });

  it('refuses a state that is not a USPS code (XX, Texas, T)', async () => {
    for (const state of ['XX', 'Texas', 'T', 'zz', '12', '']) {
      const paths = detailPaths(await trace(service, org.key, { address: { ...base(), state } }));
      expect({ state, paths }).toEqual({ state, paths: ['address.state'] });
    }
  });

  it('refuses malformed zips (7870, 78701-12, abcde, 78701 1234)', async () => {
    for (const zip of ['7870', '78701-12', 'abcde', '787011', '78701-123456', '78701 1234']) {
      const paths = detailPaths(await trace(service, org.key, { address: { ...base(), zip } }));
      expect({ zip, paths }).toEqual({ zip, paths: ['address.zip'] });
    }
  });

  it('accepts a state in any case and the zip forms 78701, 78701-1234 and 787011234', async () => {
    const { address } = fixture;
    for (const variant of [
      { ...address, state: 'tx' },
      { ...address, state: 'Tx' },
      { ...address, state: 'TX', zip: '78701' },
      { ...address, zip: '78701-1234' },
      { ...address, zip: '787011234' },
    ]) {
      const result = await trace(service, org.key, { address: variant });
      expect({ variant, status: result.status, body: result.body.status }).toEqual({ variant, status: 200, body: 'records_found' });
    }
  });

  it('refuses unknown fields, naming them: top level (propertyId), in address, in actor', async () => {
    expect(detailPaths(await trace(service, org.key, { address: fixture.address, propertyId: 'p_123' }))).toEqual(['propertyId']);
    expect(detailPaths(await trace(service, org.key, { address: { ...fixture.address, county: 'Travis' } }))).toEqual(['address.county']);
    expect(
      detailPaths(
        await trace(service, org.key, { address: fixture.address, actor: { type: 'person', firstName: 'Jane', nickname: 'JD' } }),
      ),
    ).toContain('actor.nickname');
  });

  it('requires actor.type to be person or entity', async () => {
    expect(detailPaths(await trace(service, org.key, { address: fixture.address, actor: { firstName: 'Jane' } }))).toContain('actor.type');
    for (const type of ['robot', 'PERSON', 'Entity', '', 1]) {
      const paths = detailPaths(await trace(service, org.key, { address: fixture.address, actor: { type } }));
      expect({ type, hasType: paths.includes('actor.type') }).toEqual({ type, hasType: true });
    }
    expect(detailPaths(await trace(service, org.key, { address: fixture.address, actor: 'Jane Doe' }))).toEqual(['actor']);
  });

  it('names only the failing field inside actor, without extra details on actor itself ("must be null", "anyOf")', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'robot' }, 'actor.type'],
      [{ firstName: 'Jane' }, 'actor.type'],
      [{ type: 'person', nickname: 'JD' }, 'actor.nickname'],
      [{ type: 'person', firstName: 7 }, 'actor.firstName'],
    ];
    for (const [actor, path] of cases) {
      const result = await trace(service, org.key, { address: fixture.address, actor });
      expectError(result, 422, 'invalid_request');
      expect({ actor, details: result.body.error.details }).toEqual({ actor, details: [{ path, message: expect.any(String) }] });
    }
  });

  it('allows firstName/lastName only with a person and name only with an entity', async () => {
    const entityWithNames = detailPaths(
      await trace(service, org.key, {
        address: fixture.address,
        actor: { type: 'entity', name: 'Acme', firstName: 'Jane', lastName: 'Doe' },
      }),
    );
    expect(entityWithNames.sort()).toEqual(['actor.firstName', 'actor.lastName']);
    // A person with only a name has neither name part either: every failing path is named.
    expect(detailPaths(await trace(service, org.key, { address: fixture.address, actor: { type: 'person', name: 'Acme LLC' } }))).toEqual([
      'actor.firstName',
      'actor.lastName',
      'actor.name',
    ]);
    expect(
      detailPaths(await trace(service, org.key, { address: fixture.address, actor: { type: 'person', lastName: 'X'.repeat(201) } })),
    ).toContain('actor.lastName');
  });

  it('refuses wrong JSON types (a number for zip, an object for line1, a list for city)', async () => {
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), zip: 78701 } }))).toEqual(['address.zip']);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), line1: { street: 'Main' } } }))).toEqual(['address.line1']);
    expect(detailPaths(await trace(service, org.key, { address: { ...base(), city: ['Austin'] } }))).toEqual(['address.city']);
    expect(detailPaths(await trace(service, org.key, { address: fixture.address, actor: { type: 'person', firstName: 7 } }))).toContain(
      'actor.firstName',
    );
  });

  it('reports several failures at once, one detail per failing path', async () => {
    const schemaLevel = detailPaths(
      await trace(service, org.key, { address: { line1: '', city: 5, state: 'Texas', zip: 'abcde', county: 'Travis' }, propertyId: 'x' }),
    );
    expect(new Set(schemaLevel)).toEqual(
      new Set(['address.line1', 'address.city', 'address.state', 'address.zip', 'address.county', 'propertyId']),
    );
    const ruleLevel = detailPaths(
      await trace(service, org.key, {
        address: { line1: '   ', city: 'Austin', state: 'XX', zip: '78701' },
        actor: { type: 'entity', firstName: 'Jane' },
      }),
    );
    expect(new Set(ruleLevel)).toEqual(new Set(['address.line1', 'address.state', 'actor.firstName', 'actor.name']));
  });

  it('refuses an actor that would not narrow the trace: an entity name that folds to nothing, a person with neither name part', async () => {
    const balanceBefore = await balance(service, org.organizationId);
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ type: 'entity', name: '.,' }, ['actor.name']],
      [{ type: 'entity', name: '  ' }, ['actor.name']],
      [{ type: 'entity', name: "'’" }, ['actor.name']],
      [{ type: 'entity', name: '' }, ['actor.name']],
      [{ type: 'entity', name: null }, ['actor.name']],
      [{ type: 'entity' }, ['actor.name']],
      [{ type: 'person' }, ['actor.firstName', 'actor.lastName']],
      [{ type: 'person', firstName: '', lastName: null }, ['actor.firstName', 'actor.lastName']],
      [{ type: 'person', firstName: '-', lastName: ' .' }, ['actor.firstName', 'actor.lastName']],
    ];
    for (const [actor, paths] of cases) {
      const result = await trace(service, org.key, { address: fixture.address, actor });
      expect({ actor, paths: detailPaths(result) }).toEqual({ actor, paths });
    }
    expect(await balance(service, org.organizationId)).toBe(balanceBefore);
    // One name part that holds a letter still narrows.
    expect(
      (await trace(service, org.key, { address: fixture.address, actor: { type: 'person', firstName: '.', lastName: 'Doe' } })).status,
    ).toBe(200);
  });

  it('answers 413 payload_too_large to a body over 64 KiB', async () => {
    const result = await trace(service, org.key, { address: { ...fixture.address, line2: 'x'.repeat(70 * 1024) } });
    expectError(result, 413, 'payload_too_large');
  });

  it('charged nothing for any of the refused bodies above', async () => {
    // The accepted-forms test made 5 successful traces, the one-name-part actor 1.
    expect(await balance(service, org.organizationId)).toBe(94);
    expect(await chargeRows(service, org.organizationId)).toHaveLength(6);
  });
});

describe('POST /api/v1/skiptrace: order of checks', () => {
  it('checks the credential before the body: a bad body with a bad key is 401', async () => {
    expectError(await trace(service, `stk_${'Z'.repeat(40)}`, '{"address": '), 401, 'invalid_key');
    expectError(await trace(service, null, '[]'), 401, 'invalid_key');
    expectError(await trace(service, 'nope', { address: {} }), 401, 'invalid_key');
    expectError(await trace(service, null, { address: { line1: 'x'.repeat(70 * 1024) } }), 401, 'invalid_key');
  });

  it('checks the body before the feature: a bad body for a disabled organization is 422', async () => {
    const org = await setupOrg(service, { credits: 3, enabled: false });
    expect(detailPaths(await trace(service, org.key, { address: { ...fixture.address, zip: '7870' } }))).toEqual(['address.zip']);
    expect(detailPaths(await trace(service, org.key, { address: { ...fixture.address, state: 'XX' } }))).toEqual(['address.state']);
    expectError(await trace(service, org.key, '{"address": '), 422, 'invalid_request');
    expectError(await trace(service, org.key, { address: fixture.address }), 403, 'feature_unavailable');
    expect(await balance(service, org.organizationId)).toBe(3);
  });

  it('checks the feature before credits: a disabled organization with zero credits is 403 feature_unavailable', async () => {
    const org = await setupOrg(service, { credits: 0, enabled: false });
    expectError(await trace(service, org.key, { address: fixture.address }), 403, 'feature_unavailable');
    expectError(await trace(service, org.key, { address: unknownAddress() }), 403, 'feature_unavailable');
  });

  it('answers 402 insufficient_credits at zero balance, before resolving the address', async () => {
    const org = await setupOrg(service, { credits: 0 });
    expectError(await trace(service, org.key, { address: fixture.address }), 402, 'insufficient_credits');
    expectError(await trace(service, org.key, { address: unknownAddress() }), 402, 'insufficient_credits');
    expect(await balance(service, org.organizationId)).toBe(0);
  });

  it('follows setSkipTraceEnabled at once, both ways', async () => {
    const org = await setupOrg(service, { credits: 2 });
    const toggle = (enabled: boolean) =>
      gqlData(
        service,
        `mutation($org: ID!, $enabled: Boolean!) { setSkipTraceEnabled(organizationId: $org, enabled: $enabled) { skipTraceEnabled } }`,
        { org: org.organizationId, enabled },
      );
    expect((await toggle(false)).setSkipTraceEnabled.skipTraceEnabled).toBe(false);
    expectError(await trace(service, org.key, { address: fixture.address }), 403, 'feature_unavailable');
    await toggle(true);
    expect((await trace(service, org.key, { address: fixture.address })).status).toBe(200);
    expect(await balance(service, org.organizationId)).toBe(1);
  });
});

describe('POST /api/v1/skiptrace: outcomes with the records provider', () => {
  let org: Org;
  beforeAll(async () => {
    org = await setupOrg(service, { credits: 50 });
  });

  it('returns 200 {id, status: records_found, persons} with exactly the documented fields, every owner person without an actor', async () => {
    const result = await trace(service, org.key, { address: fixture.address });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(result.body).sort()).toEqual(['id', 'persons', 'status']);
    expect(result.body.id).toMatch(UUID);
    expect(result.body.status).toBe('records_found');
    expect(result.body.persons).toEqual([JANE, JOHN, MARY]);
    for (const person of result.body.persons) {
      expect(Object.keys(person).sort()).toEqual(['age', 'emails', 'firstName', 'lastName', 'middleName', 'phones']);
      for (const phone of person.phones) {
        expect(Object.keys(phone).sort()).toEqual(['number', 'type']);
        expect(phone.number).toMatch(/^\d+$/);
      }
    }
  });

  it('traces a military address (APO AE, APO AP) imported under another spelling', async () => {
    const unit = randomInt(100_000, 1_000_000);
    await gqlData(service, `mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`, {
      input: [
        {
          address: { line1: `PSC ${unit} Box 56`, city: 'APO', state: 'AE', zip: '09204' },
          owners: [{ type: 'person', firstName: 'Sam', lastName: 'Ryan' }],
        },
        {
          address: { line1: `Unit ${unit} Box 4190`, city: 'APO', state: 'AP', zip: '96278' },
          owners: [{ type: 'person', firstName: 'Kim', lastName: 'Ode' }],
        },
      ],
    });
    for (const address of [
      { line1: `psc ${unit}, box #56`, city: 'A.P.O.', state: 'ae', zip: '09204-1234' },
      { line1: `UNIT ${unit} BOX 4190`, city: 'apo', state: 'AP', zip: '96278' },
    ]) {
      const result = await trace(service, org.key, { address });
      expect({ address, status: result.status, body: result.body.status }).toEqual({ address, status: 200, body: 'records_found' });
    }
  });

  it('treats equivalent spellings (Street Apt 4 / ST #4, tx / TX, ZIP / ZIP+4) as the same trace', async () => {
    const a = await trace(service, org.key, { address: fixture.address });
    const b = await trace(service, org.key, { address: fixture.upperAddress });
    const c = await trace(service, org.key, {
      address: { line1: `123 ${fixture.street} St.`, line2: 'Apartment 4', city: 'austin', state: 'TX', zip: '787011234' },
    });
    for (const r of [a, b, c]) expect(r.status).toBe(200);
    expect(b.body.persons).toEqual(a.body.persons);
    expect(c.body.persons).toEqual(a.body.persons);
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(3);
  });

  it('narrows to the person actor, ignoring case and punctuation', async () => {
    const result = await trace(service, org.key, {
      address: fixture.upperAddress,
      actor: { type: 'person', firstName: 'JANE', lastName: 'doe.' },
    });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ id: expect.stringMatching(UUID), status: 'records_found', persons: [JANE] });
    const lastOnly = await trace(service, org.key, { address: fixture.address, actor: { type: 'person', lastName: 'Roe' } });
    // John Roe is a person of the entity, not a person owner.
    expect(lastOnly.body).toEqual({ id: expect.stringMatching(UUID), status: 'no_records_found', persons: [] });
  });

  it("returns the entity's persons for an entity actor spelt differently (Acme Holdings, L.L.C.)", async () => {
    const result = await trace(service, org.key, { address: fixture.address, actor: { type: 'entity', name: 'Acme Holdings, L.L.C.' } });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ id: expect.stringMatching(UUID), status: 'records_found', persons: [JOHN, MARY] });
    const upper = await trace(service, org.key, { address: fixture.address, actor: { type: 'entity', name: '  ACME   HOLDINGS LLC ' } });
    expect(upper.body.persons).toEqual([JOHN, MARY]);
  });

  it('answers 200 no_records_found with persons [] to a non-matching actor, and charges it', async () => {
    const before = await balance(service, org.organizationId);
    for (const actor of [
      { type: 'person', firstName: 'Nobody', lastName: 'Here' },
      { type: 'entity', name: 'Other Holdings LLC' },
    ]) {
      const result = await trace(service, org.key, { address: fixture.address, actor });
      expect(result.status).toBe(200);
      expect(result.body).toEqual({ id: expect.stringMatching(UUID), status: 'no_records_found', persons: [] });
      const charges = await chargeRows(service, org.organizationId);
      expect(charges.filter((c) => c.request_id === result.body.id)).toEqual([{ request_id: result.body.id, amount: -1 }]);
    }
    expect(await balance(service, org.organizationId)).toBe(before - 2);
  });

  it('answers 422 invalid_request to an address without a property record, naming address, and does not charge it', async () => {
    const before = await balance(service, org.organizationId);
    const chargesBefore = (await chargeRows(service, org.organizationId)).length;
    const result = await trace(service, org.key, { address: unknownAddress() });
    expect(detailPaths(result)).toEqual(['address']);
    // An unresolvable address is not cached as a result: the same call is again 422.
    expectError(await trace(service, org.key, { address: unknownAddress() }), 422, 'invalid_request');
    expect(await balance(service, org.organizationId)).toBe(before);
    expect(await chargeRows(service, org.organizationId)).toHaveLength(chargesBefore);
  });

  it('charges exactly one credit per 200, with a ledger charge row keyed by the response id; a repeat gets a new id and is charged again', async () => {
    const fresh = await setupOrg(service, { credits: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const result = await trace(service, fresh.key, { address: fixture.address });
      expect(result.status).toBe(200);
      ids.push(result.body.id);
      expect(await balance(service, fresh.organizationId)).toBe(10 - (i + 1));
    }
    expect(new Set(ids).size).toBe(3);
    const charges = await chargeRows(service, fresh.organizationId);
    expect(charges.map((c) => c.request_id).sort()).toEqual([...ids].sort());
    expect(charges.every((c) => c.amount === -1)).toBe(true);
  });

  it('charges nothing for any error (422, 402, 403), and the balance always equals purchases − charges', async () => {
    const fresh = await setupOrg(service, { credits: 1 });
    expectError(await trace(service, fresh.key, { address: { ...fixture.address, zip: 'abcde' } }), 422, 'invalid_request');
    expectError(await trace(service, fresh.key, { address: unknownAddress() }), 422, 'invalid_request');
    expect((await trace(service, fresh.key, { address: fixture.address })).status).toBe(200);
    expectError(await trace(service, fresh.key, { address: fixture.address }), 402, 'insufficient_credits');
    await gqlData(service, `mutation($org: ID!) { setSkipTraceEnabled(organizationId: $org, enabled: false) { id } }`, {
      org: fresh.organizationId,
    });
    expectError(await trace(service, fresh.key, { address: fixture.address }), 403, 'feature_unavailable');
    expect(await balance(service, fresh.organizationId)).toBe(0);
    expect(await chargeRows(service, fresh.organizationId)).toHaveLength(1);
    const [sum] = await service.sql(
      `select coalesce(sum(amount), 0)::int as total from skip_trace_credit_ledger where organization_id = ?`,
      [fresh.organizationId],
    );
    expect(sum.total).toBe(0);
  });
});

describe('POST /api/v1/skiptrace: audit rows', () => {
  it('records every trace the resolver saw: id = response id for 200s, outcome, charged only for 200s, duration, key', async () => {
    const org = await setupOrg(service, { credits: 1 });
    const ok = await trace(service, org.key, { address: fixture.address });
    expect(ok.status).toBe(200);
    expectError(await trace(service, org.key, { address: { ...fixture.address, state: 'XX' } }), 422, 'invalid_request');
    expectError(await trace(service, org.key, { address: fixture.address }), 402, 'insufficient_credits');
    // A call with another credential leaves no row under this key.
    await trace(service, null, { address: fixture.address });

    const rows = await auditRowsEventually(service, org.keyId, 3);
    expect(rows).toHaveLength(3);
    const okRow = rows.find((r) => r.id === ok.body.id);
    expect(okRow).toMatchObject({ outcome: 'records_found', charged: true, key_id: org.keyId, organization_id: org.organizationId });
    const others = rows.filter((r) => r.id !== ok.body.id);
    expect(others.map((r) => r.charged)).toEqual([false, false]);
    expect(others.map((r) => r.outcome).sort()).toEqual(['insufficient_credits', 'invalid_request']);
    for (const row of rows) {
      expect(row.id).toMatch(UUID);
      expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    }
  });

  it('records a no_records_found 200 and a 403 with their outcomes', async () => {
    const org = await setupOrg(service, { credits: 2 });
    const none = await trace(service, org.key, { address: fixture.address, actor: { type: 'entity', name: 'Nobody Inc' } });
    expect(none.status).toBe(200);
    await gqlData(service, `mutation($org: ID!) { setSkipTraceEnabled(organizationId: $org, enabled: false) { id } }`, {
      org: org.organizationId,
    });
    expectError(await trace(service, org.key, { address: fixture.address }), 403, 'feature_unavailable');
    const rows = await auditRowsEventually(service, org.keyId, 2);
    expect(rows.map((r) => ({ outcome: r.outcome, charged: r.charged }))).toEqual([
      { outcome: 'no_records_found', charged: true },
      { outcome: 'feature_unavailable', charged: false },
    ]);
    expect(rows[0].id).toBe(none.body.id);
  });

  it('records every call that passed the credential check, also those refused before the trace ran (schema 422, bad JSON, 413)', async () => {
    const org = await setupOrg(service, { credits: 1 });
    expectError(await trace(service, org.key, { address: { ...fixture.address, zip: '7870' } }), 422, 'invalid_request');
    expectError(await trace(service, org.key, { address: fixture.address, propertyId: 'p1' }), 422, 'invalid_request');
    expectError(await trace(service, org.key, '{"address": '), 422, 'invalid_request');
    expectError(await trace(service, org.key, []), 422, 'invalid_request');
    expectError(await trace(service, org.key, { address: { ...fixture.address, line2: 'x'.repeat(70 * 1024) } }), 413, 'payload_too_large');
    const rows = await auditRowsEventually(service, org.keyId, 5);
    expect(rows).toHaveLength(5);
    expect(rows.every((r) => r.charged === false)).toBe(true);
  });
});

describe('POST /api/v1/skiptrace: rate-limit headers', () => {
  const expectWindow = (result: HttpResult, limit: number, remaining: number) => {
    expect(result.headers.get('x-ratelimit-limit')).toBe(String(limit));
    expect(result.headers.get('x-ratelimit-remaining')).toBe(String(remaining));
    const reset = Number(result.headers.get('x-ratelimit-reset'));
    expect(Number.isInteger(reset)).toBe(true);
    const now = Date.now() / 1000;
    expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
    expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 61);
    expect(result.headers.get('retry-after')).toBeNull();
  };

  it('sends X-RateLimit-Limit 1000, -Remaining counting down and -Reset on 200s and on every error after the credential', async () => {
    const org = await setupOrg(service, { credits: 1 });
    const calls: Array<[unknown, number]> = [
      [{ address: fixture.address }, 200],
      [{ address: { ...fixture.address, zip: '7870' } }, 422],
      ['{"address": ', 422],
      [{ address: { ...fixture.address, state: 'XX' } }, 422],
      [{ address: unknownAddress() }, 402],
      [{ address: { ...fixture.address, line2: 'x'.repeat(70 * 1024) } }, 413],
    ];
    for (const [i, [body, status]] of calls.entries()) {
      const result = await trace(service, org.key, body);
      expect({ i, status: result.status }).toEqual({ i, status });
      expectWindow(result, 1000, 1000 - (i + 1));
    }
    const disabled = await setupOrg(service, { credits: 1, enabled: false });
    const forbidden = await trace(service, disabled.key, { address: fixture.address });
    expect(forbidden.status).toBe(403);
    expectWindow(forbidden, 1000, 999);
  });

  it("sends the rate-limit headers on a 401 too (the client IP's window)", async () => {
    const result = await trace(service, null, { address: fixture.address });
    expect(result.status).toBe(401);
    expect(result.headers.get('x-ratelimit-limit')).not.toBeNull();
    expect(result.headers.get('x-ratelimit-remaining')).not.toBeNull();
    expect(result.headers.get('x-ratelimit-reset')).not.toBeNull();
  });

  describe('with SKIPTRACE_RATE_LIMIT_PER_MIN=3', () => {
    let limited: TestService;
    let limitedFixture: Fixture;
    beforeAll(async () => {
      limited = await startService({ SKIPTRACE_RATE_LIMIT_PER_MIN: '3' });
      limitedFixture = await importFixture(limited);
    });
    afterAll(() => limited?.close());

    it('answers the 4th request of a key in the window with 429 rate_limited and Retry-After, uncharged', async () => {
      const org = await setupOrg(limited, { credits: 10 });
      const statuses: number[] = [];
      for (const body of [{ address: limitedFixture.address }, { address: { zip: 1 } }, { address: limitedFixture.address }]) {
        const result = await trace(limited, org.key, body);
        statuses.push(result.status);
        expect(result.headers.get('x-ratelimit-limit')).toBe('3');
      }
      expect(statuses).toEqual([200, 422, 200]);
      const fourth = await trace(limited, org.key, { address: limitedFixture.address });
      expectError(fourth, 429, 'rate_limited');
      const retryAfter = fourth.headers.get('retry-after');
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(60);
      expect(fourth.headers.get('x-ratelimit-limit')).toBe('3');
      expect(fourth.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(fourth.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
      // The rate window is checked before the body: even a bad body gets 429 now.
      expectError(await trace(limited, org.key, '{"address": '), 429, 'rate_limited');
      expect(await balance(limited, org.organizationId)).toBe(8);

      // The window is per key: another organization's key is unaffected.
      const other = await setupOrg(limited, { credits: 1 });
      expect((await trace(limited, other.key, { address: limitedFixture.address })).status).toBe(200);
    });

    it('audits only the requests the window passed: a 429 rate_limited writes nothing', async () => {
      const org = await setupOrg(limited, { credits: 10 });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await trace(limited, org.key, { address: limitedFixture.address })).status);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      const rows = await auditRowsEventually(limited, org.keyId, 3);
      expect(rows.map((r) => [r.outcome, r.charged])).toEqual(Array(3).fill(['records_found', true]));
    });

    it('counts skipTrace calls on /graphql against the same key window (the limit is per API key)', async () => {
      const org = await setupOrg(limited, { credits: 10 });
      for (let i = 0; i < 3; i++) expect((await trace(limited, org.key, { address: limitedFixture.address })).status).toBe(200);
      const viaGraphql = await gql(
        limited,
        `mutation($input: SkipTraceInput!) { skipTrace(input: $input) { ${TRACE_FIELDS} } }`,
        { input: { address: limitedFixture.address } },
        org.key,
      );
      expect(errorCode(viaGraphql)).toBe('RATE_LIMITED');
      expect(await balance(limited, org.organizationId)).toBe(7);
    });
  });
});

describe('POST /api/v1/skiptrace: racing for the last credits', () => {
  it('with 20 credits and 200 concurrent traces: exactly 20 answers 200, the rest 402, 20 charges, balance 0, no 5xx', async () => {
    const racing = service;
    const raceFixture = await importFixture(racing);
    const org = await setupOrg(racing, { credits: 20 });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => trace(racing, org.key, { address: i % 2 ? raceFixture.address : raceFixture.upperAddress })),
    );

    const byStatus = new Map<number, number>();
    for (const r of results) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ 200: 20, 402: 180 });
    for (const r of results.filter((r) => r.status === 402)) expect(r.body.error.code).toBe('insufficient_credits');
    const okIds = results.filter((r) => r.status === 200).map((r) => r.body.id as string);
    expect(new Set(okIds).size).toBe(20);
    for (const r of results.filter((r) => r.status === 200)) expect(r.body.persons).toEqual([JANE, JOHN, MARY]);

    expect(await balance(racing, org.organizationId)).toBe(0);
    const charges = await chargeRows(racing, org.organizationId);
    expect(charges.map((c) => c.request_id).sort()).toEqual([...okIds].sort());
    const [ledger] = await racing.sql(
      `select coalesce(sum(amount) filter (where kind = 'purchase'), 0)::int as purchases,
              coalesce(-sum(amount) filter (where kind = 'charge'), 0)::int as charges
         from skip_trace_credit_ledger where organization_id = ?`,
      [org.organizationId],
    );
    expect(ledger).toEqual({ purchases: 20, charges: 20 });
    const audit = await auditRowsEventually(racing, org.keyId, 200);
    expect(audit).toHaveLength(200);
    expect(
      audit
        .filter((r) => r.charged)
        .map((r) => r.id)
        .sort(),
    ).toEqual([...okIds].sort());
  });
});

describe('skipTrace on /graphql', () => {
  const SKIP_TRACE = `mutation($input: SkipTraceInput!) { skipTrace(input: $input) { ${TRACE_FIELDS} } }`;

  it('works with the stk key and mirrors the REST result, charging one credit', async () => {
    const org = await setupOrg(service, { credits: 5 });
    const input = { address: fixture.address, actor: { type: 'entity', name: 'Acme Holdings, L.L.C.' } };
    const rest = await trace(service, org.key, input);
    const viaGraphql = await service.graphql(SKIP_TRACE, { input }, org.key);
    expect(viaGraphql.status).toBe(200);
    expect(viaGraphql.body.errors).toBeUndefined();
    const result = viaGraphql.body.data.skipTrace;
    expect(result.id).toMatch(UUID);
    expect(result.id).not.toBe(rest.body.id);
    expect({ status: result.status, persons: result.persons }).toEqual({ status: rest.body.status, persons: rest.body.persons });
    expect(await balance(service, org.organizationId)).toBe(3);
    expect((await chargeRows(service, org.organizationId)).map((c) => c.request_id)).toContain(result.id);

    const none = await gqlData(
      service,
      SKIP_TRACE,
      { input: { address: fixture.address, actor: { type: 'person', firstName: 'Nobody' } } },
      org.key,
    );
    expect(none.skipTrace).toEqual({ id: expect.stringMatching(UUID), status: 'no_records_found', persons: [] });
  });

  it('carries the REST errors as extensions codes (BAD_USER_INPUT, INSUFFICIENT_CREDITS, FEATURE_UNAVAILABLE)', async () => {
    const org = await setupOrg(service, { credits: 0 });
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: unknownAddress() } }, org.key))).toBe('INSUFFICIENT_CREDITS');
    await addCredits(service, org.organizationId, 1);
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: unknownAddress() } }, org.key))).toBe('BAD_USER_INPUT');
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: { ...fixture.address, state: 'XX' } } }, org.key))).toBe(
      'BAD_USER_INPUT',
    );
    await gqlData(service, `mutation($org: ID!) { setSkipTraceEnabled(organizationId: $org, enabled: false) { id } }`, {
      org: org.organizationId,
    });
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: fixture.address } }, org.key))).toBe('FEATURE_UNAVAILABLE');
    expect(await balance(service, org.organizationId)).toBe(1);
  });

  it('refuses an actor that would not narrow the trace with BAD_USER_INPUT naming the field', async () => {
    const org = await setupOrg(service, { credits: 1 });
    for (const [actor, path] of [
      [{ type: 'entity', name: '.,' }, 'actor.name'],
      [{ type: 'person', firstName: '  ' }, 'actor.firstName'],
    ] as const) {
      const result = await gql(service, SKIP_TRACE, { input: { address: fixture.address, actor } }, org.key);
      expect(errorCode(result)).toBe('BAD_USER_INPUT');
      expect((result.errors![0].extensions as { details: { path: string }[] }).details.map((d) => d.path)).toContain(path);
    }
    expect(await balance(service, org.organizationId)).toBe(1);
  });

  it('refuses a gateway key (even an ADMIN of the organization) with FORBIDDEN, and the platform token too', async () => {
    const org = await setupOrg(service, { credits: 5 });
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'], organizationId: org.organizationId });
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: fixture.address } }, admin.key))).toBe('FORBIDDEN');
    expect(errorCode(await gql(service, SKIP_TRACE, { input: { address: fixture.address } }))).toBe('FORBIDDEN');
    const revoked = await setupOrg(service, { credits: 1 });
    await gqlData(service, REVOKE, { org: revoked.organizationId });
    const stale = await service.graphql(SKIP_TRACE, { input: { address: fixture.address } }, revoked.key);
    expect(stale.status).toBe(401);
    expect(errorCode(stale.body)).toBe('UNAUTHENTICATED');
    expect(await balance(service, org.organizationId)).toBe(5);
  });

  it('spells the enum values in lower case, as the API reference does', async () => {
    const enumValues = async (name: string) =>
      (await gqlData(service, `query($name: String!) { __type(name: $name) { enumValues { name } } }`, { name })).__type.enumValues.map(
        (v: { name: string }) => v.name,
      );
    expect((await enumValues('ActorType')).sort()).toEqual(['entity', 'person']);
    expect((await enumValues('SkipTraceStatus')).sort()).toEqual(['no_records_found', 'records_found']);
    expect((await enumValues('PhoneType')).sort()).toEqual(['mobile', 'residential', 'unknown']);
    // And as enum literals in a document.
    const org = await setupOrg(service, { credits: 1 });
    const literal = await gqlData(
      service,
      `mutation { skipTrace(input: { address: { line1: ${JSON.stringify(fixture.address.line1)}, city: "Austin", state: "TX", zip: "78701" }, actor: { type: person, firstName: "Jane" } }) { status persons { phones { type } } } }`,
      {},
      org.key,
    );
    expect(literal.skipTrace).toEqual({ status: 'records_found', persons: [{ phones: [{ type: 'mobile' }, { type: 'residential' }] }] });
  });
});
