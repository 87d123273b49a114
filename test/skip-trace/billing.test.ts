/**
 * Billing a customer can see, black-box over HTTP: `X-Credits-Remaining` and `X-Cache` on every
 * 200, `GET /api/v1/skiptrace/account` and `/usage` (and their GraphQL fields), and the
 * reconciliation they promise: the usage's charged calls are the ledger's charges are the ids the
 * caller received.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { HttpResult, TestService } from '../support/harness.js';
import { type BillingOrg, ledger, postTrace, setupBillingOrg, sleep, uniqueAddress, useServiceWithVendor } from '../support/billing.js';

const TIMEOUT_MS = 600;
const MAX_IN_FLIGHT = 7;

let vendor: FakeVendor;
let service: TestService;

useServiceWithVendor(
  {
    SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
    SKIPTRACE_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
  },
  (started) => ({ service, vendor } = started),
);

const get = (path: string, key: string | null, method = 'GET') =>
  service.request(path, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
const account = (key: string) => get('/api/v1/skiptrace/account', key);
const usage = (key: string, query = '') => get(`/api/v1/skiptrace/usage${query}`, key);
const codeOf = (result: HttpResult) => ({ status: result.status, code: result.body?.error?.code });
const detailPaths = (result: HttpResult) => (result.body.error.details as { path: string }[]).map((d) => d.path).sort();

/** Every usage row, walking the pages of `limit`. */
async function allUsage(key: string, limit: number, bounds = ''): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const page: HttpResult = await usage(key, `?limit=${limit}${bounds}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(page.status).toBe(200);
    expect(page.body.requests.length).toBeLessThanOrEqual(limit);
    rows.push(...page.body.requests);
    cursor = page.body.nextCursor;
  } while (cursor);
  return rows;
}

describe('GET /api/v1/skiptrace/account', () => {
  it('answers {organizationId, skipTraceEnabled, credits, rateLimitPerMinute, maxInFlight}, consuming no credit but a point of the window', async () => {
    const org = await setupBillingOrg(service, 12);
    const first = await account(org.key);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      organizationId: org.organizationId,
      skipTraceEnabled: true,
      credits: 12,
      rateLimitPerMinute: 1000,
      maxInFlight: MAX_IN_FLIGHT,
    });
    const second = await account(org.key);
    expect(second.body.credits).toBe(12);
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
    // One window for the key: traces, account and usage together.
    const traced = await postTrace(service, org.key, { address: uniqueAddress() });
    expect(Number(traced.headers.get('x-ratelimit-remaining'))).toBe(Number(second.headers.get('x-ratelimit-remaining')) - 1);
    const listed = await usage(org.key);
    expect(Number(listed.headers.get('x-ratelimit-remaining'))).toBe(Number(traced.headers.get('x-ratelimit-remaining')) - 1);
    expect((await account(org.key)).body.credits).toBe(11);
  });

  it('shows a disabled organization as skipTraceEnabled: false, and mirrors skipTraceAccount on /graphql', async () => {
    const org = await setupBillingOrg(service, 3);
    await service.graphql(`mutation($o: ID!) { setSkipTraceEnabled(organizationId: $o, enabled: false) { id } }`, {
      o: org.organizationId,
    });
    const rest = await account(org.key);
    expect(rest.body.skipTraceEnabled).toBe(false);
    const gql = await service.graphql(
      `{ skipTraceAccount { organizationId skipTraceEnabled credits rateLimitPerMinute maxInFlight } }`,
      {},
      org.key,
    );
    expect(gql.body.data.skipTraceAccount).toEqual(rest.body);
  });

  it('answers 401 invalid_key without a skip trace key (none, a gateway key, the platform token) and 405 to other methods', async () => {
    const gateway = await service.provision({ scopes: ['READ'] });
    for (const path of ['/api/v1/skiptrace/account', '/api/v1/skiptrace/usage']) {
      for (const key of [null, gateway.key, service.platformToken])
        expect(codeOf(await get(path, key))).toEqual({ status: 401, code: 'invalid_key' });
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const refused = await get(path, null, method);
        expect(codeOf(refused)).toEqual({ status: 405, code: 'method_not_allowed' });
        expect(refused.headers.get('allow')).toBe('GET');
      }
    }
    const forbidden = await service.graphql(`{ skipTraceAccount { credits } }`, {}, gateway.key);
    expect(forbidden.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});

describe('GET /api/v1/skiptrace/usage: parameters', () => {
  let org: BillingOrg;
  beforeAll(async () => {
    org = await setupBillingOrg(service, 2);
  });

  it('refuses unknown and repeated parameters with 422, naming each', async () => {
    const unknown = await usage(org.key, '?foo=1&limit=5&bar=x');
    expect(codeOf(unknown)).toEqual({ status: 422, code: 'invalid_request' });
    expect(detailPaths(unknown)).toEqual(['bar', 'foo']);
    const repeated = await usage(org.key, '?limit=5&limit=6');
    expect(detailPaths(repeated)).toEqual(['limit']);
  });

  it('refuses a limit outside 1..200 or not an integer, and bounds that are not ISO 8601 timestamps', async () => {
    for (const limit of ['0', '201', 'abc', '1.5', '-1']) {
      const refused = await usage(org.key, `?limit=${limit}`);
      expect(codeOf(refused), limit).toEqual({ status: 422, code: 'invalid_request' });
      expect(detailPaths(refused), limit).toEqual(['limit']);
    }
    for (const bound of ['from=yesterday', 'to=2026-13-45T00:00:00Z', 'from=12345']) {
      const refused = await usage(org.key, `?${bound}`);
      expect(codeOf(refused), bound).toEqual({ status: 422, code: 'invalid_request' });
      expect(detailPaths(refused), bound).toEqual([bound.split('=')[0]]);
    }
    const backwards = await usage(org.key, '?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z');
    expect(detailPaths(backwards)).toEqual(['to']);
    for (const limit of ['1', '200']) expect((await usage(org.key, `?limit=${limit}`)).status).toBe(200);
  });

  it("refuses a malformed cursor and another organization's cursor with 422", async () => {
    const other = await setupBillingOrg(service, 3);
    await postTrace(service, other.key, { address: uniqueAddress() });
    await postTrace(service, other.key, { address: uniqueAddress() });
    const page = await usage(other.key, '?limit=1');
    expect(page.body.nextCursor).toEqual(expect.any(String));
    expect((await usage(other.key, `?limit=1&cursor=${page.body.nextCursor}`)).status).toBe(200);
    for (const cursor of [page.body.nextCursor, 'garbage', Buffer.from('[1,"x","y"]').toString('base64url')]) {
      const refused = await usage(org.key, `?cursor=${encodeURIComponent(cursor)}`);
      expect(codeOf(refused)).toEqual({ status: 422, code: 'invalid_request' });
      expect(detailPaths(refused)).toEqual(['cursor']);
    }
  });
});

describe('reconciliation', () => {
  it('after fresh, cached, 402, 422, 504 and replayed calls, the charged usage rows are the ledger charges are the 200 ids', async () => {
    const org = await setupBillingOrg(service, 3);
    const answered: HttpResult[] = [];
    const call = async (body: unknown, headers: Record<string, string> = {}) => {
      const result = await postTrace(service, org.key, body, headers);
      answered.push(result);
      return result;
    };
    const a = { address: uniqueAddress() };
    const fresh = await call(a);
    const cached = await call(a);
    const invalid = await call({ address: { ...uniqueAddress(), state: 'XX' } });
    vendor.setMode('slow');
    vendor.setDelay(TIMEOUT_MS + 300);
    const timedOut = await call({ address: uniqueAddress() });
    vendor.setMode('ok');
    const keyedBody = { address: uniqueAddress() };
    const idempotencyKey = { 'idempotency-key': randomUUID() };
    const keyed = await call(keyedBody, idempotencyKey);
    const replay = await call(keyedBody, idempotencyKey);
    const noCredits = await call({ address: uniqueAddress() });

    expect([fresh, cached, invalid, timedOut, keyed, replay, noCredits].map((r) => r.status)).toEqual([200, 200, 422, 504, 200, 200, 402]);
    expect(replay.body.id).toBe(keyed.body.id);
    expect([fresh, cached, keyed].map((r) => [r.headers.get('x-credits-remaining'), r.headers.get('x-cache')])).toEqual([
      ['2', 'miss'],
      ['1', 'hit'],
      ['0', 'miss'],
    ]);
    await sleep(400); // the timed-out trace lands in the background

    // The ids the caller received (a replay repeats its first answer's id).
    const ids = [...new Set(answered.filter((r) => r.status === 200).map((r) => r.body.id as string))].sort();
    const { credits, charges } = await ledger(service, org.organizationId);
    expect(credits).toBe(0);
    expect(charges).toEqual(ids);
    expect((await account(org.key)).body.credits).toBe(0);

    const rows = await allUsage(org.key, 2);
    expect(rows).toHaveLength(answered.length);
    expect(
      rows
        .filter((r) => r.charged)
        .map((r) => r.id)
        .sort(),
    ).toEqual(ids);
    // Newest first, each row once.
    const order = rows.map((r) => `${r.createdAt}|${r.id}`);
    expect([...order].sort().reverse()).toEqual(order);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    expect(rows.find((r) => r.id === cached.body.id)).toMatchObject({ outcome: 'records_found', charged: true, cacheHit: true });
    expect(rows.find((r) => r.id === fresh.body.id)).toMatchObject({ outcome: 'records_found', charged: true, cacheHit: false });
    expect(rows.map((r) => r.outcome).sort()).toEqual(
      ['records_found', 'records_found', 'records_found', 'invalid_request', 'timeout', 'replayed', 'insufficient_credits'].sort(),
    );
    for (const row of rows) {
      // Single calls: no list, no item key.
      expect(Object.keys(row).sort()).toEqual(['batchId', 'cacheHit', 'charged', 'createdAt', 'id', 'jobId', 'key', 'outcome']);
      expect(row).toMatchObject({ batchId: null, jobId: null, key: null });
      expect(new Date(row.createdAt).toISOString()).toBe(row.createdAt);
    }

    // The GraphQL field lists the same.
    const gql = await service.graphql(
      `{ skipTraceUsage(limit: 200) { requests { id createdAt outcome charged cacheHit batchId jobId key } nextCursor } }`,
      {},
      org.key,
    );
    expect(gql.body.data.skipTraceUsage).toEqual({ requests: rows, nextCursor: null });

    // Bounds: from inclusive, to exclusive.
    const middle = rows[2];
    const fromMiddle = await allUsage(org.key, 50, `&from=${encodeURIComponent(middle.createdAt)}`);
    expect(fromMiddle.every((r) => r.createdAt >= middle.createdAt)).toBe(true);
    expect(fromMiddle.map((r) => r.id)).toContain(middle.id);
    const beforeMiddle = await allUsage(org.key, 50, `&to=${encodeURIComponent(middle.createdAt)}`);
    expect(beforeMiddle.every((r) => r.createdAt < middle.createdAt)).toBe(true);
    expect(fromMiddle.length + beforeMiddle.length).toBe(rows.length);
  });
});
