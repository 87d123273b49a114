/**
 * A charge is final once any response carried its result. A 200 whose response was not written in
 * full has its charge refunded, unless a replay of its Idempotency-Key delivered the result
 * meanwhile; a replay after the refund runs anew and is charged. Made observable with HTTP/1.1
 * pipelining: a trace's answer queued on a connection behind a response that never finishes (the
 * client never reads) is charged, and lost once the client closes that connection.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { HttpResult, TestService } from '../support/harness.js';
import {
  eventually,
  ledger,
  postTrace,
  setupBillingOrg,
  sleep,
  uniqueAddress,
  useServiceWithVendor,
  type BillingOrg,
} from '../support/billing.js';
import { pipeline, WIRE_SLOW_RESPONSE, wireRequest, wireTrace, type Pipeline } from '../support/pipelining.js';

let vendor: FakeVendor;
let service: TestService;

useServiceWithVendor({ SKIPTRACE_MAX_IN_FLIGHT: '100' }, (started) => ({ service, vendor } = started));

/** Long enough for the reversal a lost response triggers to have run, had it been due. */
const SETTLE_MS = 400;

const keyed = (key: string) => ({ 'idempotency-key': key });
const replayed = (result: HttpResult) => result.headers.get('idempotent-replayed');

/**
 * Pipelines a keyed trace behind a response the client never reads, and waits until the trace is
 * charged (its answer then waits on the connection): the connection and the charged request's id.
 */
async function chargedButStuck(org: BillingOrg, key: string, body: unknown): Promise<{ stuck: Pipeline; id: string }> {
  const before = (await ledger(service, org.organizationId)).charges;
  const stuck = pipeline(service.baseUrl, [WIRE_SLOW_RESPONSE, wireTrace(org.key, body, { 'Idempotency-Key': key })], { read: false });
  const id = await eventually(async () => (await ledger(service, org.organizationId)).charges.find((charge) => !before.includes(charge)));
  return { stuck, id };
}

async function lose(connection: Pipeline) {
  connection.socket.destroy();
  await connection.closed;
  await sleep(SETTLE_MS);
}

async function auditOf(organizationId: string, id: string) {
  const [row] = await service.sql(`select outcome, charged from skip_trace_requests where organization_id = ? and id = ?`, [
    organizationId,
    id,
  ]);
  return row as { outcome: string; charged: boolean };
}

describe('a charge whose first response was lost', () => {
  it('stays charged once a replay delivered the result: the loss refunds nothing, and later replays still replay', async () => {
    const org = await setupBillingOrg(service, 999);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const { stuck, id } = await chargedButStuck(org, key, body);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 998, charges: [id] });

    const replay = await postTrace(service, org.key, body, keyed(key));
    expect(replay.status).toBe(200);
    expect(replay.body.id).toBe(id);
    expect(replay.body.persons.length).toBeGreaterThan(0);
    expect(replayed(replay)).toBe('true');

    await lose(stuck);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 998, charges: [id] });
    expect(await auditOf(org.organizationId, id)).toEqual({ outcome: 'records_found', charged: true });
    const again = await postTrace(service, org.key, body, keyed(key));
    expect([again.status, again.body.id, replayed(again)]).toEqual([200, id, 'true']);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 998, charges: [id] });
    expect(vendor.calls).toHaveLength(1);
  });

  it('is refunded when no replay delivered it: the answer is forgotten, and the key then runs anew and is charged', async () => {
    const org = await setupBillingOrg(service, 999);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const { stuck, id } = await chargedButStuck(org, key, body);
    await lose(stuck);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 999, charges: [] });
    expect(await auditOf(org.organizationId, id)).toEqual({ outcome: 'client_closed', charged: false });

    const anew = await postTrace(service, org.key, body, keyed(key));
    expect(anew.status).toBe(200);
    expect(anew.body.id).not.toBe(id);
    expect(replayed(anew)).toBeNull();
    expect(anew.headers.get('x-credits-remaining')).toBe('998');
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 998, charges: [anew.body.id] });
    const replay = await postTrace(service, org.key, body, keyed(key));
    expect([replay.status, replay.body.id, replayed(replay)]).toEqual([200, anew.body.id, 'true']);
  });

  it('is refunded once every response that carried it was lost, the replays included', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const { stuck, id } = await chargedButStuck(org, key, body);
    // A replay stuck the same way on a second connection.
    const stuckReplay = pipeline(service.baseUrl, [WIRE_SLOW_RESPONSE, wireTrace(org.key, body, { 'Idempotency-Key': key })], {
      read: false,
    });
    await eventually(async () => ((await replays(org.organizationId)) === 1 ? true : undefined));
    await lose(stuck);
    // The replay may still deliver it.
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 9, charges: [id] });
    await lose(stuckReplay);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 10, charges: [] });
    const anew = await postTrace(service, org.key, body, keyed(key));
    expect([anew.status, replayed(anew)]).toEqual([200, null]);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 9, charges: [anew.body.id] });
  });

  it('is never refunded by the loss of a replay when the first response was delivered', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const first = await postTrace(service, org.key, body, keyed(key));
    expect(first.status).toBe(200);
    const stuckReplay = pipeline(service.baseUrl, [WIRE_SLOW_RESPONSE, wireTrace(org.key, body, { 'Idempotency-Key': key })], {
      read: false,
    });
    await eventually(async () => ((await replays(org.organizationId)) === 1 ? true : undefined));
    await lose(stuckReplay);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 9, charges: [first.body.id] });
    const replay = await postTrace(service, org.key, body, keyed(key));
    expect([replay.status, replay.body.id, replayed(replay)]).toEqual([200, first.body.id, 'true']);
  });
});

const batchHeaders = (org: BillingOrg, key: string) => ({
  Authorization: `Bearer ${org.key}`,
  'Content-Type': 'application/json',
  'Idempotency-Key': key,
});
const wireBatch = (org: BillingOrg, key: string, body: unknown) =>
  wireRequest('POST', '/api/v1/skiptrace/batch', batchHeaders(org, key), JSON.stringify(body));
const postBatch = (org: BillingOrg, key: string, body: unknown): Promise<HttpResult> =>
  service.request('/api/v1/skiptrace/batch', { method: 'POST', headers: batchHeaders(org, key), body: JSON.stringify(body) });
const itemIds = (result: HttpResult) => (result.body.results as { id: string }[]).map((item) => item.id);

/** As chargedButStuck, for a keyed batch of `count` items: resolves once every item is charged and the answer is stored. */
async function batchChargedButStuck(org: BillingOrg, key: string, count: number) {
  const body = { items: Array.from({ length: count }, () => ({ address: uniqueAddress() })) };
  const stuck = pipeline(service.baseUrl, [WIRE_SLOW_RESPONSE, wireBatch(org, key, body)], { read: false });
  await eventually(async () => {
    const [row] = await service.sql(
      `select outcome is not null as stored from skip_trace_idempotency_keys where organization_id = ? and idempotency_key = ?`,
      [org.organizationId, key],
    );
    return row?.stored ? true : undefined;
  });
  return { stuck, body };
}

describe('a keyed batch whose first response was lost', () => {
  it('stays charged once a replay delivered its answer: the loss refunds no item, and later replays still replay', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const { stuck, body } = await batchChargedButStuck(org, key, 2);
    const replay = await postBatch(org, key, body);
    expect([replay.status, replayed(replay)]).toEqual([200, 'true']);
    const ids = itemIds(replay);
    const calls = vendor.calls.length;
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 8, charges: expect.arrayContaining(ids) });

    await lose(stuck);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 8, charges: expect.arrayContaining(ids) });
    for (const id of ids) expect(await auditOf(org.organizationId, id)).toEqual({ outcome: 'records_found', charged: true });
    const again = await postBatch(org, key, body);
    expect([again.status, again.body.id, replayed(again)]).toEqual([200, replay.body.id, 'true']);
    expect(vendor.calls).toHaveLength(calls);
  });

  it('is refunded when no replay delivered it: a replay after the refund runs anew and is charged', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const { stuck, body } = await batchChargedButStuck(org, key, 2);
    await lose(stuck);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 10, charges: [] });

    const anew = await postBatch(org, key, body);
    expect([anew.status, replayed(anew), anew.body.charged]).toEqual([200, null, 2]);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 8, charges: expect.arrayContaining(itemIds(anew)) });
    const replay = await postBatch(org, key, body);
    expect([replay.status, replay.body.id, replayed(replay)]).toEqual([200, anew.body.id, 'true']);
  });

  it('is refunded once every response that carried it was lost, the replay included', async () => {
    const org = await setupBillingOrg(service, 10);
    const key = randomUUID();
    const { stuck, body } = await batchChargedButStuck(org, key, 2);
    const stuckReplay = pipeline(service.baseUrl, [WIRE_SLOW_RESPONSE, wireBatch(org, key, body)], { read: false });
    await eventually(async () => ((await replays(org.organizationId)) === 1 ? true : undefined));
    await lose(stuck);
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
    await lose(stuckReplay);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 10, charges: [] });
    const anew = await postBatch(org, key, body);
    expect([anew.status, replayed(anew), anew.body.charged]).toEqual([200, null, 2]);
    expect((await ledger(service, org.organizationId)).credits).toBe(8);
  });
});

async function replays(organizationId: string): Promise<number> {
  const [row] = await service.sql(`select count(*)::int as n from skip_trace_requests where organization_id = ? and outcome = 'replayed'`, [
    organizationId,
  ]);
  return row.n as number;
}

describe('a replay racing the loss of the first response', () => {
  it('20 times at about the same moment: the replay delivers the charged result, or the refund wins and the replay runs anew and is charged; the ledger is exact', async () => {
    const org = await setupBillingOrg(service, 100);
    const rounds: { id: string; replay: HttpResult }[] = [];
    for (let round = 0; round < 20; round++) {
      const key = randomUUID();
      const body = { address: uniqueAddress() };
      const { stuck, id } = await chargedButStuck(org, key, body);
      // The connection closes from 5 ms before the replay is sent to 13 ms after.
      const lead = (round % 10) * 2 - 5;
      let replay: Promise<HttpResult>;
      if (lead < 0) {
        stuck.socket.destroy();
        await sleep(-lead);
        replay = postTrace(service, org.key, body, keyed(key));
      } else {
        replay = postTrace(service, org.key, body, keyed(key));
        await sleep(lead);
        stuck.socket.destroy();
      }
      rounds.push({ id, replay: await replay });
    }
    await sleep(SETTLE_MS);
    const { credits, charges } = await ledger(service, org.organizationId);
    for (const { id, replay } of rounds) {
      expect(replay.status).toBe(200);
      if (replayed(replay) === 'true') {
        expect(replay.body.id).toBe(id);
        expect(charges).toContain(id);
      } else {
        // The refund came first: the first charge is gone, and the replay ran anew with a charge of its own.
        expect(replay.body.id).not.toBe(id);
        expect(charges).not.toContain(id);
        expect(charges).toContain(replay.body.id);
      }
    }
    // One charge per round, whichever won, the balance is the ledger's, and the audit agrees.
    expect(charges).toHaveLength(20);
    expect(credits).toBe(80);
    const [audit] = await service.sql(`select count(*)::int as n from skip_trace_requests where organization_id = ? and charged`, [
      org.organizationId,
    ]);
    expect(audit.n).toBe(20);
    console.info(`replay/refund race: ${rounds.filter(({ replay }) => replayed(replay) === 'true').length} of 20 replays came first`);
  }, 60_000);
});
