/**
 * The items of a list (skip-trace/items/): the list's shape (one 422 naming every path), an item's
 * own rules (its failure alone, the single trace's wording, paths relative to the item), and the
 * credit rule: charges in index order, so when credits run out mid-list the lower indexes are the
 * ones served, whatever order their traces finish in. The last part runs items against the real
 * database and a loopback vendor.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { RULE_MESSAGES } from '../../src/skip-trace/input-rules.js';
import { chargeInIndexOrder } from '../../src/skip-trace/items/charge-order.js';
import { checkItem, checkListShape, listShapeProblems, ITEM_KEY_RULE } from '../../src/skip-trace/items/item-rules.js';
import { sql } from '../../src/infra/database/sql.js';
import { traceDeps } from '../../src/skip-trace/skip-trace.service.js';
import { ChargeGuardFailed, runTraceItem, runTraceItems, type AlsoInCharge, type ListRun } from '../../src/skip-trace/items/run-item.js';
import { vendorEntry, FAKE_VENDOR_PERSONS, type FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { ledger, setupBillingOrg, uniqueAddress, useServiceWithVendor } from '../support/billing.js';

const address = { line1: '1 Main St', city: 'Austin', state: 'TX', zip: '78701' };
const shape = { max: 3 };
/** The house number of a uniqueAddress(), as the vendor receives it (standardized: upper case). */
const numberOf = (item: { address: { line1: string } }) => item.address.line1.split(' ')[0].toUpperCase();
const paths = (body: unknown) => listShapeProblems(body, shape).map((d) => d.path);

describe('the shape of a list', () => {
  it('accepts 1..max items of known fields with unique keys (an item may break its own rules)', () => {
    const items = [{ key: 'a-1', address }, { address: { zip: 'nope' } }, { key: 'B.2:x_y', address, actor: null }];
    expect(checkListShape({ items }, shape)).toBe(items);
  });

  it('refuses what is not a list body, naming the path', () => {
    for (const body of [null, [], 'items', 3]) expect(paths(body)).toEqual(['(body)']);
    expect(paths({})).toEqual(['items']);
    expect(paths({ items: {} })).toEqual(['items']);
    expect(paths({ items: [] })).toEqual(['items']);
    expect(paths({ items: [{ address }, { address }, { address }, { address }] })).toEqual(['items']);
    expect(paths({ items: [{ address }], webhookUrl: 'x' })).toEqual(['webhookUrl']);
    expect(listShapeProblems({ items: [{ address }], webhookUrl: 'x' }, { max: 3, otherFields: ['webhookUrl'] })).toEqual([]);
  });

  it('names every bad item: not an object, an unknown field, a malformed or repeated key', () => {
    const body = {
      items: [{ key: 'k', address }, 'row', { key: 'k', address, extra: 1 }],
    };
    expect(paths(body)).toEqual(['items[1]', 'items[2].extra', 'items[2].key']);
    const problems = listShapeProblems(body, shape);
    expect(problems.find((d) => d.path === 'items[2].key')?.message).toBe('repeats the key of items[0]');
    for (const key of ['', 'a'.repeat(65), 'has space', 'é', 7]) expect(paths({ items: [{ key, address }] })).toEqual(['items[0].key']);
    expect(listShapeProblems({ items: [{ key: 'a b', address }] }, shape)[0].message).toBe(ITEM_KEY_RULE.message);
    expect(
      paths({
        items: [
          { key: 'a'.repeat(64), address },
          { key: null, address },
        ],
      }),
    ).toEqual([]);
    expect(() => checkListShape(body, shape)).toThrowError(AppError);
  });
});

describe("an item's own rules", () => {
  const detailsOf = (item: unknown) => {
    try {
      checkItem(item as never);
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).kind).toBe('invalid_request');
      return (error as AppError).details;
    }
    return undefined;
  };

  it("are the single trace's, in its words, with paths relative to the item", () => {
    expect(detailsOf({ address: { ...address, zip: '7870' } })).toEqual([{ path: 'address.zip', message: RULE_MESSAGES.zip }]);
    expect(detailsOf({ address: { ...address, state: 'ZZ', line1: ' ' } })?.map((d) => d.path)).toEqual(['address.line1', 'address.state']);
    expect(detailsOf({ address, actor: { type: 'entity', name: '.,' } })).toEqual([
      { path: 'actor.name', message: RULE_MESSAGES.entityName },
    ]);
    expect(detailsOf({})).toEqual([{ path: 'address', message: 'is required' }]);
    expect(detailsOf({ address, actor: { type: 'robot' } })?.map((d) => d.path)).toEqual(['actor.type']);
    expect(detailsOf({ address, actor: 'Jane' })?.map((d) => d.path)).toEqual(['actor']);
  });

  it('standardize a valid item as the single trace does', () => {
    const a = checkItem({ key: 'x', address: { line1: '123 Main Street Apt 4', city: 'Austin', state: 'tx', zip: '78701' } });
    const b = checkItem({ address: { line1: '123 MAIN ST #4', city: 'AUSTIN', state: 'TX', zip: '78701-1234' } });
    expect(a.cacheKey).toBe(b.cacheKey);
  });
});

describe('charges in index order', () => {
  it('lets an item charge only once every item before it has settled, and fails the rest once credits ran out', async () => {
    const order = chargeInIndexOrder(4);
    const log: string[] = [];
    const charge = (index: number) =>
      order.turn(index).then(
        () => log.push(`charge ${index}`),
        (error: AppError) => log.push(`${error.kind} ${index}`),
      );
    const third = charge(3);
    const second = charge(2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(log).toEqual([]);
    order.settle(1); // failed for a reason of its own, before item 0 settled
    await charge(0);
    expect(log).toEqual(['charge 0']);
    order.settle(0);
    await second;
    expect(log).toEqual(['charge 0', 'charge 2']);
    order.settle(2, new AppError('insufficient_credits', 'none left'));
    await third;
    expect(log).toEqual(['charge 0', 'charge 2', 'insufficient_credits 3']);
  });
});

describe('a list against the database: credits run out mid-list', () => {
  let service: TestService;
  let vendor: FakeVendor;
  useServiceWithVendor({ SKIPTRACE_TIMEOUT_MS: '5000' }, (started) => ({ service, vendor } = started));

  const runOf = async (organizationId: string, count: number): Promise<ListRun> => {
    const [key] = await service.sql(`select id from skip_trace_keys where organization_id = ? and revoked_at is null`, [organizationId]);
    return {
      deps: traceDeps(service.app.services),
      principal: { type: 'organization', keyId: key.id, keyHint: 'stk_test…', organizationId },
      list: { batchId: randomUUID(), jobId: null },
      deadline: performance.now() + 5000,
      order: chargeInIndexOrder(count),
      refundUndelivered: false,
    };
  };

  it('serves the lowest indexes though the highest finish first; one credit each, the rest insufficient_credits', async () => {
    const org = await setupBillingOrg(service, 3);
    const items = Array.from({ length: 6 }, (_, i) => ({ key: `row-${i}`, address: uniqueAddress() }));
    // Item i answers after (6 - i) * 40 ms: the last item first. Item 1 is a no-record (still charged).
    const indexOf = (request: any) => items.findIndex((item) => String(request.propertyAddress.street).startsWith(numberOf(item)));
    vendor.respondEach((request) => {
      const index = indexOf(request);
      return { entry: vendorEntry(request.requestId, index === 1 ? [] : FAKE_VENDOR_PERSONS), delayMs: (6 - index) * 40 };
    });
    const run = await runOf(org.organizationId, items.length);
    const results = await runTraceItems(run, items, 10);

    expect(results.map((r) => [r.index, r.key, r.status])).toEqual([
      [0, 'row-0', 'records_found'],
      [1, 'row-1', 'no_records_found'],
      [2, 'row-2', 'records_found'],
      [3, 'row-3', 'failed'],
      [4, 'row-4', 'failed'],
      [5, 'row-5', 'failed'],
    ]);
    expect(results.slice(3).every((r) => r.error?.code === 'insufficient_credits')).toBe(true);
    const after = await ledger(service, org.organizationId);
    expect(after.credits).toBe(0);
    expect(after.charges).toEqual(
      results
        .slice(0, 3)
        .map((r) => r.id)
        .sort(),
    );
    // Each item is a usage row of its own, naming the list and its key.
    const rows = await service.sql(`select id::text, batch_id::text, key, charged, outcome from skip_trace_requests where batch_id = ?`, [
      run.list.batchId,
    ]);
    expect(rows.map((r) => [r.key, r.charged, r.outcome]).sort()).toEqual(
      results.map((r) => [r.key, r.status !== 'failed', r.error?.code ?? r.status]).sort(),
    );
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set(results.map((r) => r.id)));
  });

  it("writes the caller's fragment in the item's charge statement, and its guard keeps a settled item from being charged again", async () => {
    const org = await setupBillingOrg(service, 5);
    await service.sql(
      `create table if not exists list_item_fragment_test (item text primary key, status text not null, trace_id uuid not null)`,
    );
    const item = `item-${randomUUID()}`;
    const alsoInCharge: AlsoInCharge = (result) => ({
      ctes: sql`stored as (insert into list_item_fragment_test (item, status, trace_id) select ${item}, ${result.status}, ${result.id}::uuid from charged)`,
      guard: sql`not exists (select from list_item_fragment_test where item = ${item})`,
    });
    const input = { key: 'k', address: uniqueAddress() };
    const first = await runTraceItem(await runOf(org.organizationId, 1), 0, input, alsoInCharge);
    expect(first.status).toBe('records_found');
    const stored = await service.sql(`select status, trace_id::text as trace_id from list_item_fragment_test where item = ?`, [item]);
    expect(stored).toEqual([{ status: 'records_found', trace_id: first.id }]);
    // The same item again (a job resumed after a kill): the guard fails, nothing is written or charged.
    await expect(runTraceItem(await runOf(org.organizationId, 1), 0, input, alsoInCharge)).rejects.toBeInstanceOf(ChargeGuardFailed);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [first.id] });
  });

  it('fails a bad item alone, uncharged, with its details relative to the item', async () => {
    const org = await setupBillingOrg(service, 5);
    const items = [
      { address: uniqueAddress() },
      { key: 'bad', address: { ...uniqueAddress(), zip: '7870' } },
      { address: uniqueAddress() },
    ];
    const results = await runTraceItems(await runOf(org.organizationId, items.length), items, 10);
    expect(results.map((r) => r.status)).toEqual(['records_found', 'failed', 'records_found']);
    expect(results[1].error).toEqual({
      code: 'invalid_request',
      message: 'The skip trace request is invalid.',
      details: [{ path: 'address.zip', message: RULE_MESSAGES.zip }],
    });
    expect((await ledger(service, org.organizationId)).credits).toBe(3);
  });
});
