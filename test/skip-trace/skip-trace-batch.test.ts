/**
 * `POST /api/v1/skiptrace/batch` and `skipTraceBatch`, black-box over HTTP against a loopback
 * vendor: the list's shape (one 422), items that fail alone, the batch as a whole (403, 402, one
 * in-flight slot, one point of the window, its items' concurrency), credits in index order when
 * they run out mid-list and when two batches race for the last ones, isolation between
 * organizations, Idempotency-Key replays, and an item past the timeout.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FAKE_VENDOR_PERSONS, vendorEntry, type FakeVendor } from '../support/fake-vendor.js';
import type { HttpResult, TestService } from '../support/harness.js';
import { eventually, ledger, postTrace, setupBillingOrg, sleep, uniqueAddress, useServiceWithVendor } from '../support/billing.js';

const TIMEOUT_MS = 1500;
const MAX_IN_FLIGHT = 2;
const BATCH_CONCURRENCY = 3;

let vendor: FakeVendor;
let service: TestService;

useServiceWithVendor(
  {
    SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
    SKIPTRACE_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT),
    SKIPTRACE_BATCH_CONCURRENCY: String(BATCH_CONCURRENCY),
    SKIPTRACE_IDEMPOTENCY_SWEEP_INTERVAL_MS: '100',
  },
  (started) => ({ service, vendor } = started),
);

const postBatch = (key: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> =>
  service.request('/api/v1/skiptrace/batch', {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** Sends a batch of 10 credits' organization and leaves 150 ms later; resolves once its charges were refunded to 8 credits. */
async function abandonBatch(org: { key: string; organizationId: string }, items: unknown[], headers: Record<string, string> = {}) {
  const aborted = new AbortController();
  const gone = fetch(`${service.baseUrl}/api/v1/skiptrace/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ items }),
    signal: aborted.signal,
  }).catch(() => undefined);
  await sleep(150);
  aborted.abort();
  await gone;
  await sleep(600);
  await eventually(async () => ((await ledger(service, org.organizationId)).credits === 8 ? true : undefined), 3000);
}

const codeOf = (result: HttpResult) => ({ status: result.status, code: result.body?.error?.code });
const detailPaths = (result: HttpResult) => (result.body.error.details as { path: string }[]).map((d) => d.path).sort();
const statuses = (result: HttpResult) => (result.body.results as { status: string }[]).map((r) => r.status);
const rows = (count: number) => Array.from({ length: count }, (_, i) => ({ key: `row-${i}`, address: uniqueAddress() }));
/** The house number of a uniqueAddress(), as the vendor receives it (standardized: upper case). */
const numberOf = (item: { address: { line1: string } }) => item.address.line1.split(' ')[0].toUpperCase();
const indexIn = (items: { address: { line1: string } }[], request: any) =>
  items.findIndex((item) => String(request.propertyAddress.street).startsWith(numberOf(item)));

describe('the shape of a batch', () => {
  it('refuses a body that is not a list of 1..100 items with unique keys: one 422 naming every path, nothing traced or charged', async () => {
    const org = await setupBillingOrg(service, 5);
    const address = uniqueAddress();
    const cases: Array<[unknown, string[]]> = [
      [[{ address }], ['(body)']],
      [{}, ['items']],
      [{ items: [] }, ['items']],
      [{ items: Array.from({ length: 101 }, () => ({ address })) }, ['items']],
      [{ items: [{ address }], extra: true }, ['extra']],
      [
        { items: [{ key: 'a', address }, 7, { key: 'a', address, foo: 1 }, { key: 'b c', address }] },
        ['items[1]', 'items[2].foo', 'items[2].key', 'items[3].key'],
      ],
      // Wrong JSON types inside an item are the request's shape too.
      [{ items: [{ address: { ...address, zip: 78701 } }] }, ['items[0].address.zip']],
    ];
    for (const [body, paths] of cases) {
      const refused = await postBatch(org.key, body);
      expect(codeOf(refused), JSON.stringify(body).slice(0, 80)).toEqual({ status: 422, code: 'invalid_request' });
      expect(detailPaths(refused)).toEqual(paths);
    }
    expect(vendor.calls).toHaveLength(0);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 5, charges: [] });
  });

  it('accepts a body up to 1 MiB (over the single call 64 KiB) and refuses a larger one with 413', async () => {
    const org = await setupBillingOrg(service, 100);
    const long = (text: string) => `${text} ${'x'.repeat(190)}`;
    const items = rows(100).map((item) => ({
      ...item,
      address: { ...item.address, line2: `Suite ${'9'.repeat(190)}` },
      actor: { type: 'person', firstName: long('Jane'), lastName: long('Doe') },
    }));
    const large = JSON.stringify({ items });
    expect(large.length).toBeGreaterThan(64 * 1024);
    const accepted = await postBatch(org.key, large);
    expect(accepted.status).toBe(200);
    expect(accepted.body.results).toHaveLength(100);
    const tooLarge = await postBatch(org.key, JSON.stringify({ items, pad: 'x'.repeat(1024 * 1024) }));
    expect(codeOf(tooLarge)).toEqual({ status: 413, code: 'payload_too_large' });
  });
});

describe('a batch', () => {
  it('answers {id, charged, results} in request order with X-Credits-Remaining; a bad item fails alone, uncharged', async () => {
    const org = await setupBillingOrg(service, 10);
    const unresolvable = uniqueAddress();
    vendor.respondEach((request) => {
      const unknown = String(request.propertyAddress.street).startsWith(numberOf({ address: unresolvable }));
      const meta = unknown ? { matched: false, error: true, errorCode: 'address_not_found' } : undefined;
      return { entry: vendorEntry(request.requestId, unknown ? [] : FAKE_VENDOR_PERSONS, meta) };
    });
    const items = [
      { key: 'a', address: uniqueAddress() },
      { key: 'bad-zip', address: { ...uniqueAddress(), zip: '7870' } },
      { address: unresolvable },
      { key: 'd', address: uniqueAddress(), actor: { type: 'entity', name: '.,' } },
      { key: 'e', address: uniqueAddress(), actor: { type: 'person', firstName: 'John' } },
    ];
    const result = await postBatch(org.key, { items });
    expect(result.status).toBe(200);
    expect(Object.keys(result.body).sort()).toEqual(['charged', 'id', 'results']);
    expect(result.body.charged).toBe(2);
    expect(result.headers.get('x-credits-remaining')).toBe('8');
    const [a, badZip, unknown, badActor, e] = result.body.results;
    expect(a).toMatchObject({ index: 0, key: 'a', status: 'records_found', error: null });
    expect(a.persons.length).toBeGreaterThan(0);
    expect(badZip).toMatchObject({ index: 1, key: 'bad-zip', status: 'failed', persons: [] });
    expect(badZip.error).toEqual({
      code: 'invalid_request',
      message: expect.any(String),
      details: [{ path: 'address.zip', message: expect.any(String) }],
    });
    expect(unknown).toMatchObject({
      index: 2,
      key: null,
      status: 'failed',
      error: { code: 'invalid_request', details: [{ path: 'address' }] },
    });
    expect(badActor.error.details.map((d: { path: string }) => d.path)).toEqual(['actor.name']);
    expect(e).toMatchObject({ index: 4, key: 'e', status: 'records_found' });

    // Each item is a usage row of its own: its id, the batch, its key.
    const usage = await service.request('/api/v1/skiptrace/usage?limit=50', { headers: { authorization: `Bearer ${org.key}` } });
    const listed = usage.body.requests.filter((r: { batchId: string }) => r.batchId === result.body.id);
    expect(listed.map((r: any) => [r.id, r.key, r.charged]).sort()).toEqual(
      result.body.results.map((r: any) => [r.id, r.key, r.status !== 'failed']).sort(),
    );
    const after = await ledger(service, org.organizationId);
    expect(after.charges).toEqual([a.id, e.id].sort());
  });

  it('is refused as a whole as a single call is: 403 feature_unavailable, 402 when the balance is zero at its start', async () => {
    const broke = await setupBillingOrg(service, 0);
    expect(codeOf(await postBatch(broke.key, { items: rows(2) }))).toEqual({ status: 402, code: 'insufficient_credits' });
    const disabled = await setupBillingOrg(service, 3);
    await service.graphql(`mutation($o: ID!) { setSkipTraceEnabled(organizationId: $o, enabled: false) { id } }`, {
      o: disabled.organizationId,
    });
    expect(codeOf(await postBatch(disabled.key, { items: rows(2) }))).toEqual({ status: 403, code: 'feature_unavailable' });
    expect(vendor.calls).toHaveLength(0);
  });

  it('counts once against the window and takes one in-flight slot, its items at most SKIPTRACE_BATCH_CONCURRENCY at a time', async () => {
    const org = await setupBillingOrg(service, 20);
    let outstanding = 0;
    let most = 0;
    vendor.respondEach((request) => {
      outstanding++;
      most = Math.max(most, outstanding);
      setTimeout(() => outstanding--, 150);
      return { entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS), delayMs: 150 };
    });
    const before = await service.request('/api/v1/skiptrace/account', { headers: { authorization: `Bearer ${org.key}` } });
    const batch = postBatch(org.key, { items: rows(8) });
    await sleep(50);
    // The batch holds one slot of MAX_IN_FLIGHT (2): a single call still gets the other, a third request none.
    const [single, third] = await Promise.all([
      postTrace(service, org.key, { address: uniqueAddress() }),
      sleep(20).then(() => postBatch(org.key, { items: rows(1) })),
    ]);
    const done = await batch;
    expect(done.status).toBe(200);
    expect(single.status).toBe(200);
    expect(codeOf(third)).toEqual({ status: 429, code: 'concurrency_limit' });
    expect(most).toBeLessThanOrEqual(BATCH_CONCURRENCY + 1);
    expect(most).toBeGreaterThan(1);
    const remaining = (result: HttpResult) => Number(result.headers.get('x-ratelimit-remaining'));
    // account, batch, single, third: one point each, whatever the batch's size.
    const after = await service.request('/api/v1/skiptrace/account', { headers: { authorization: `Bearer ${org.key}` } });
    expect(remaining(before) - remaining(after)).toBe(4);
  });
});

describe('the vendor calls of a batch', () => {
  it('group the items traced at once into shared calls (one request each), never retried', async () => {
    const org = await setupBillingOrg(service, 10);
    const items = rows(6);
    const result = await postBatch(org.key, { items });
    expect(statuses(result)).toEqual(Array(6).fill('records_found'));
    const sizes = vendor.calls.map((call) => call.body.requests.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(6);
    expect(Math.max(...sizes)).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(BATCH_CONCURRENCY);
  });
});

describe('an item the vendor failed', () => {
  it('fails alone with internal_error (its message masked), uncharged, nothing cached for it', async () => {
    const org = await setupBillingOrg(service, 10);
    const items = rows(3);
    vendor.respondEach((request) => (indexIn(items, request) === 1 ? {} : { entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS) }));
    const result = await postBatch(org.key, { items });
    expect(statuses(result)).toEqual(['records_found', 'failed', 'records_found']);
    expect(result.body.results[1].error).toEqual({ code: 'internal_error', message: 'Unexpected error; retry.' });
    expect(result.body.charged).toBe(2);
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
    vendor.reset();
    const retried = await postTrace(service, org.key, { address: items[1].address });
    expect(retried.headers.get('x-cache')).toBe('miss');
  });
});

describe('credits', () => {
  it('are exact when the balance runs out mid-list: the lowest indexes are served, whatever order their traces finish in', async () => {
    const org = await setupBillingOrg(service, 3);
    const items = rows(6);
    // The last item answers first; item 1 finds nobody (still one credit).
    vendor.respondEach((request) => {
      const index = indexIn(items, request);
      return { entry: vendorEntry(request.requestId, index === 1 ? [] : FAKE_VENDOR_PERSONS), delayMs: (6 - index) * 40 };
    });
    const result = await postBatch(org.key, { items });
    expect(statuses(result)).toEqual(['records_found', 'no_records_found', 'records_found', 'failed', 'failed', 'failed']);
    expect(result.body.results.slice(3).map((r: any) => r.error.code)).toEqual(Array(3).fill('insufficient_credits'));
    expect(result.body.charged).toBe(3);
    expect(result.headers.get('x-credits-remaining')).toBe('0');
    const after = await ledger(service, org.organizationId);
    expect(after).toEqual({
      credits: 0,
      charges: result.body.results
        .slice(0, 3)
        .map((r: any) => r.id)
        .sort(),
    });
  });

  it('two batches of one organization racing for the last credits: charges equal the items served, each batch a prefix, never below zero', async () => {
    const org = await setupBillingOrg(service, 5);
    vendor.respondEach((request) => ({
      entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS),
      delayMs: 20 + Math.floor(Math.random() * 40),
    }));
    const [first, second] = await Promise.all([postBatch(org.key, { items: rows(4) }), postBatch(org.key, { items: rows(4) })]);
    const served: string[] = [];
    for (const batch of [first, second]) {
      expect(batch.status).toBe(200);
      const found = statuses(batch).filter((s) => s === 'records_found').length;
      expect(statuses(batch)).toEqual([...Array(found).fill('records_found'), ...Array(4 - found).fill('failed')]);
      expect(batch.body.charged).toBe(found);
      expect(Number(batch.headers.get('x-credits-remaining'))).toBeGreaterThanOrEqual(0);
      served.push(...batch.body.results.filter((r: any) => r.status === 'records_found').map((r: any) => r.id));
    }
    expect(served).toHaveLength(5);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 0, charges: served.sort() });
  });

  it("isolate organizations: one organization's batch charges and lists only its own", async () => {
    const [a, b] = await Promise.all([setupBillingOrg(service, 2), setupBillingOrg(service, 7)]);
    const key = randomUUID();
    const items = rows(3);
    const [fromA, fromB] = await Promise.all([
      postBatch(a.key, { items }, { 'idempotency-key': key }),
      postBatch(b.key, { items }, { 'idempotency-key': key }),
    ]);
    expect(statuses(fromA)).toEqual(['records_found', 'records_found', 'failed']);
    expect(statuses(fromB)).toEqual(['records_found', 'records_found', 'records_found']);
    expect(fromB.headers.get('idempotent-replayed')).toBeNull();
    expect((await ledger(service, a.organizationId)).credits).toBe(0);
    expect((await ledger(service, b.organizationId)).credits).toBe(4);
    const usageOfB = await service.request('/api/v1/skiptrace/usage?limit=50', { headers: { authorization: `Bearer ${b.key}` } });
    expect(usageOfB.body.requests.every((r: any) => r.batchId === fromB.body.id)).toBe(true);
  });
});

describe('Idempotency-Key and the timeout', () => {
  it('replays the whole answer (same id and results, Idempotent-Replayed: true) with no charge and no vendor call; another body is 422', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const body = { items: rows(3) };
    const first = await postBatch(org.key, body, { 'idempotency-key': key });
    expect(first.status).toBe(200);
    const calls = vendor.calls.length;
    const again = await postBatch(org.key, JSON.parse(JSON.stringify(body)), { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-credits-remaining')).toBe(first.headers.get('x-credits-remaining'));
    expect(vendor.calls.length).toBe(calls);
    expect((await ledger(service, org.organizationId)).credits).toBe(7);
    const other = await postBatch(org.key, { items: rows(1) }, { 'idempotency-key': key });
    expect(codeOf(other)).toEqual({ status: 422, code: 'idempotency_key_reused' });
  });

  it('answers 409 idempotency_key_in_use while the first batch with the key is in flight', async () => {
    const org = await setupBillingOrg(service, 10);
    vendor.respondEach((request) => ({ entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS), delayMs: 300 }));
    const key = randomUUID();
    const body = { items: rows(2) };
    const first = postBatch(org.key, body, { 'idempotency-key': key });
    await sleep(100);
    expect(codeOf(await postBatch(org.key, body, { 'idempotency-key': key }))).toEqual({ status: 409, code: 'idempotency_key_in_use' });
    expect((await first).status).toBe(200);
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
  });

  it('charges nothing for a batch whose caller went away before its answer', async () => {
    const org = await setupBillingOrg(service, 10);
    const items = rows(4);
    // Items 0 and 1 are cached and charged at once; 2 and 3 wait on the vendor while the caller leaves.
    for (const index of [0, 1]) expect((await postTrace(service, org.key, { address: items[index].address })).status).toBe(200);
    vendor.respondEach((request) => ({ entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS), delayMs: 400 }));
    await abandonBatch(org, items);
    expect((await ledger(service, org.organizationId)).charges).toHaveLength(2);
  });

  it("a keyed batch whose caller went away: its refunded items are charged again by the key's retry, each once", async () => {
    const org = await setupBillingOrg(service, 10);
    const items = rows(4);
    for (const index of [0, 1]) expect((await postTrace(service, org.key, { address: items[index].address })).status).toBe(200);
    vendor.respondEach((request) => ({ entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS), delayMs: 400 }));
    const key = randomUUID();
    await abandonBatch(org, items, { 'idempotency-key': key });
    const retried = await postBatch(org.key, { items }, { 'idempotency-key': key });
    expect(statuses(retried)).toEqual(Array(4).fill('records_found'));
    const { credits, charges } = await ledger(service, org.organizationId);
    expect(credits).toBe(4);
    const ids = (retried.body.results as { id: string }[]).map((r) => r.id);
    expect(ids.every((id) => charges.includes(id))).toBe(true);
  });

  it("keeps a keyed batch's charged items 24 h: then the key runs anew and charges again, and the sweep deletes them", async () => {
    const org = await setupBillingOrg(service, 10);
    const body = { items: rows(2) };
    const key = randomUUID();
    const itemRows = () =>
      service.sql(`select item_index from skip_trace_batch_items where organization_id = ? and idempotency_key = ?`, [
        org.organizationId,
        key,
      ]);
    expect(statuses(await postBatch(org.key, body, { 'idempotency-key': key }))).toEqual(['records_found', 'records_found']);
    expect(await itemRows()).toHaveLength(2);
    const expire = (table: string) =>
      service.sql(`update ${table} set expires_at = now() - interval '1 second' where organization_id = ? and idempotency_key = ?`, [
        org.organizationId,
        key,
      ]);
    expect(
      await service.sql(
        `select count(*)::int as n from skip_trace_batch_items i join skip_trace_idempotency_keys k using (organization_id, idempotency_key) where k.idempotency_key = ? and i.expires_at = k.expires_at`,
        [key],
      ),
    ).toEqual([{ n: 2 }]);
    // 24 h later: the key and its items (which expire with it, as checked above).
    await expire('skip_trace_idempotency_keys');
    await expire('skip_trace_batch_items');
    const anew = await postBatch(org.key, body, { 'idempotency-key': key });
    expect(anew.headers.get('idempotent-replayed')).toBeNull();
    expect(statuses(anew)).toEqual(['records_found', 'records_found']);
    expect((await ledger(service, org.organizationId)).credits).toBe(6);
    await expire('skip_trace_batch_items');
    await eventually(async () => ((await itemRows()).length === 0 ? true : undefined), 3000);
  });

  it('fails an item not finished within SKIPTRACE_TIMEOUT_MS of the batch start with timeout (uncharged); it keeps running and caches', async () => {
    const org = await setupBillingOrg(service, 12);
    const items = rows(3);
    // Items 0 and 2 are cached (a vendor call answers all its requests at once, so they must not share item 1's).
    for (const index of [0, 2]) expect((await postTrace(service, org.key, { address: items[index].address })).status).toBe(200);
    vendor.respondEach((request) => ({ entry: vendorEntry(request.requestId, FAKE_VENDOR_PERSONS), delayMs: TIMEOUT_MS + 700 }));
    const started = performance.now();
    const result = await postBatch(org.key, { items });
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 600);
    expect(statuses(result)).toEqual(['records_found', 'failed', 'records_found']);
    expect(result.body.results[1].error.code).toBe('timeout');
    expect(result.body.charged).toBe(2);
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
    // Its trace ran on and cached its result: a retry of that item is a cache hit.
    const retried = await eventually(async () => {
      const single = await postTrace(service, org.key, { address: items[1].address });
      return single.headers.get('x-cache') === 'hit' ? single : undefined;
    }, 3000);
    expect(retried.status).toBe(200);
  });
});

describe('skipTraceBatch on /graphql', () => {
  it('answers the same results, and is refused beside another field', async () => {
    const org = await setupBillingOrg(service, 5);
    const query = `mutation($items: [SkipTraceItemInput!]!) { skipTraceBatch(items: $items) { id charged creditsRemaining results { index key status error { code details { path } } } } }`;
    const items = [
      { key: 'x', address: uniqueAddress() },
      { key: 'y', address: { ...uniqueAddress(), state: 'ZZ' } },
    ];
    const result = await service.graphql(query, { items }, org.key);
    expect(result.body.data.skipTraceBatch).toMatchObject({
      charged: 1,
      creditsRemaining: 4,
      results: [
        { index: 0, key: 'x', status: 'records_found', error: null },
        { index: 1, key: 'y', status: 'failed', error: { code: 'invalid_request', details: [{ path: 'address.state' }] } },
      ],
    });
    const duplicate = await service.graphql(query, { items: [items[0], items[0]] }, org.key);
    expect(duplicate.body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', details: [{ path: 'items[1].key' }] });
    const beside = await service.graphql(
      `mutation($items: [SkipTraceItemInput!]!) { skipTraceBatch(items: $items) { id } again: skipTraceBatch(items: $items) { id } }`,
      { items },
      org.key,
    );
    expect(beside.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect((await ledger(service, org.organizationId)).credits).toBe(4);
  });
});
