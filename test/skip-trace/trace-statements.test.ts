/**
 * The trace's statements (src/skip-trace/trace.data.ts): the charge, its ledger row, the audit row
 * and the Idempotency-Key's answer are one statement, so concurrent charges racing for the last
 * credits are exact on either database, with no unit of work around them; and the refund is one
 * statement, at most once, and never after a replay read the answer it would forget. Over HTTP (cached traces, where the opening read lets every racer
 * through to the charge) and on the statements themselves.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { TestService } from '../support/harness.js';
import { ledger, postTrace, setupBillingOrg, sleep, uniqueAddress, useServiceWithVendor } from '../support/billing.js';
import { chargeTrace, refundUndelivered } from '../../src/skip-trace/trace.data.js';
import { beginIdempotentRequest } from '../../src/skip-trace/idempotency/idempotent-request.js';
import { releaseKey } from '../../src/skip-trace/idempotency/idempotency-keys.data.js';
import type { AuditEntry } from '../../src/billing/audit.js';

let vendor: FakeVendor;
let service: TestService;

useServiceWithVendor({ SKIPTRACE_MAX_IN_FLIGHT: '100' }, (started) => ({ service, vendor } = started));

async function auditRows(organizationId: string) {
  return (await service.sql(
    `select id::text as id, outcome, charged, cache_hit from skip_trace_requests where organization_id = ? order by id`,
    [organizationId],
  )) as { id: string; outcome: string; charged: boolean; cache_hit: boolean }[];
}

/** An audit entry of a charged cached trace of `organizationId`, as the service writes it. */
const chargedEntry = (organizationId: string): AuditEntry => ({
  id: randomUUID(),
  principal: { type: 'organization', keyId: randomUUID(), keyHint: 'stk_test…test', organizationId },
  startedAt: performance.now(),
  outcome: 'records_found',
  cacheKey: randomUUID(),
  cacheHit: true,
  charged: true,
});

describe('cached traces racing for the last credits', () => {
  it('40 concurrent cached calls with 7 credits: 7 × 200 (balances 6…0), 33 × 402, 7 charges, 40 audit rows, balance 0', async () => {
    const body = { address: uniqueAddress() };
    // The result is cached first, on another organization.
    const warm = await setupBillingOrg(service, 1);
    expect((await postTrace(service, warm.key, body)).headers.get('x-cache')).toBe('miss');

    const org = await setupBillingOrg(service, 7);
    const results = await Promise.all(Array.from({ length: 40 }, () => postTrace(service, org.key, body)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect([ok.length, refused.length]).toEqual([7, 33]);
    expect(refused.every((r) => r.body.error.code === 'insufficient_credits')).toBe(true);
    expect(ok.every((r) => r.headers.get('x-cache') === 'hit')).toBe(true);
    expect(ok.map((r) => Number(r.headers.get('x-credits-remaining'))).sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(vendor.calls).toHaveLength(1);

    const okIds = ok.map((r) => r.body.id as string).sort();
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 0, charges: okIds });
    const audit = await auditRows(org.organizationId);
    expect(audit).toHaveLength(40);
    expect(audit.filter((row) => row.charged).map((row) => row.id)).toEqual(okIds);
    expect(audit.filter((row) => row.charged).every((row) => row.cache_hit && row.outcome === 'records_found')).toBe(true);
    expect(audit.filter((row) => !row.charged).every((row) => row.outcome === 'insufficient_credits')).toBe(true);
  });
});

describe('the charge statement', () => {
  it('30 concurrent charges with 5 credits: exactly 5 charged (balances 4…0) with their ledger and audit rows, 25 write nothing', async () => {
    const org = await setupBillingOrg(service, 5);
    const entries = Array.from({ length: 30 }, () => chargedEntry(org.organizationId));
    const outcomes = await Promise.all(entries.map((entry) => chargeTrace(service.app.services.sql, entry)));
    const charged = entries.filter((_, i) => outcomes[i] !== 'no_credit').map((entry) => entry.id);
    expect(outcomes.filter((outcome) => outcome === 'no_credit')).toHaveLength(25);
    expect(outcomes.flatMap((outcome) => (typeof outcome === 'object' ? [outcome.creditsRemaining] : [])).sort()).toEqual([0, 1, 2, 3, 4]);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 0, charges: [...charged].sort() });
    const audit = await auditRows(org.organizationId);
    expect(audit.map((row) => row.id)).toEqual([...charged].sort());
    expect(audit.every((row) => row.charged && row.cache_hit && row.outcome === 'records_found')).toBe(true);
  });

  it('stores a keyed answer with the balance after the charge; writes nothing when the claim was lost or no credit is left', async () => {
    const sql = service.app.services.sql;
    const org = await setupBillingOrg(service, 2);
    const begin = async () => {
      const begun = await beginIdempotentRequest(sql, org.organizationId, { key: randomUUID(), fingerprint: 'f' }, 60_000);
      if (!('claim' in begun)) throw new Error('not claimed');
      return begun.claim;
    };
    const storedOf = async (key: string) =>
      (
        await service.sql(`select outcome, request_id::text as request_id from skip_trace_idempotency_keys where idempotency_key = ?`, [
          key,
        ])
      )[0];
    const answer = { id: 'x', creditsRemaining: -1 };

    const claim = await begin();
    const entry = chargedEntry(org.organizationId);
    expect(await chargeTrace(sql, entry, { claim, answer })).toEqual({ creditsRemaining: 1 });
    const stored = await storedOf(claim.key);
    const outcome = typeof stored.outcome === 'string' ? JSON.parse(stored.outcome) : stored.outcome;
    expect(outcome).toEqual({ result: { id: 'x', creditsRemaining: 1 } });
    expect(stored.request_id).toBe(entry.id);

    // A claim released meanwhile (its caller left): no charge, no ledger row, no audit row.
    const lost = await begin();
    await releaseKey(sql, lost);
    expect(await chargeTrace(sql, chargedEntry(org.organizationId), { claim: lost, answer })).toBe('claim_lost');
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 1, charges: [entry.id] });

    // The last credit, then a claim held with no credit left: nothing written, the claim still open.
    expect(await chargeTrace(sql, chargedEntry(org.organizationId))).toEqual({ creditsRemaining: 0 });
    const broke = await begin();
    expect(await chargeTrace(sql, chargedEntry(org.organizationId), { claim: broke, answer })).toBe('no_credit');
    expect((await storedOf(broke.key)).outcome).toBeNull();
    expect((await ledger(service, org.organizationId)).charges).toHaveLength(2);
    expect(await auditRows(org.organizationId)).toHaveLength(2);
  });

  /** A keyed charge of 1 credit on `org`, as a trace holding the key's claim makes it: the key and the charge. */
  async function keyedCharge(org: { organizationId: string }) {
    const sql = service.app.services.sql;
    const begun = await beginIdempotentRequest(sql, org.organizationId, { key: randomUUID(), fingerprint: 'f' }, 60_000);
    if (!('claim' in begun)) throw new Error('not claimed');
    const entry = chargedEntry(org.organizationId);
    const answer = { id: entry.id, creditsRemaining: 0 };
    const charged = await chargeTrace(sql, entry, { claim: begun.claim, answer });
    if (typeof charged !== 'object') throw new Error(charged);
    return { key: begun.claim.key, charge: { organizationId: org.organizationId, requestId: entry.id, keyed: true } };
  }

  it('refunds a charge once: the credit back, the audit row uncharged, the answer forgotten; a second refund changes nothing', async () => {
    const sql = service.app.services.sql;
    const org = await setupBillingOrg(service, 3);
    const { key, charge } = await keyedCharge(org);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 2, charges: [charge.requestId] });
    const results = await Promise.all([0, 1, 2].map(() => refundUndelivered(sql, charge, 'client_closed')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await refundUndelivered(sql, charge, 'client_closed')).toBe(false);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 3, charges: [] });
    expect(await auditRows(org.organizationId)).toEqual([
      { id: charge.requestId, outcome: 'client_closed', charged: false, cache_hit: true },
    ]);
    // Forgotten: the key's next request claims it and runs anew.
    expect(await beginIdempotentRequest(sql, org.organizationId, { key, fingerprint: 'f' }, 60_000)).toHaveProperty('claim');
  });

  it('refunds an unkeyed charge once', async () => {
    const sql = service.app.services.sql;
    const org = await setupBillingOrg(service, 1);
    const entry = chargedEntry(org.organizationId);
    expect(await chargeTrace(sql, entry)).toEqual({ creditsRemaining: 0 });
    const charge = { organizationId: org.organizationId, requestId: entry.id, keyed: false };
    const results = await Promise.all([0, 1, 2].map(() => refundUndelivered(sql, charge, 'client_closed')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 1, charges: [] });
  });

  it('a replay read and the loss of the first response at about the same moment, 40 times: the replay holds the charge, or the refund forgets the answer first; never both', async () => {
    const sql = service.app.services.sql;
    const org = await setupBillingOrg(service, 40);
    let replays = 0;
    for (let i = 0; i < 40; i++) {
      const { key, charge } = await keyedCharge(org);
      // Either may start first, by up to a few milliseconds.
      const after = async <T>(ms: number, run: () => Promise<T>) => (await sleep(ms), run());
      const [read, refunded] = await Promise.all([
        after((i % 2) * 3, () => beginIdempotentRequest<{ id: string }>(sql, org.organizationId, { key, fingerprint: 'f' }, 60_000)),
        after((i >> 1) % 10, () => refundUndelivered(sql, charge, 'client_closed')),
      ]);
      if ('replay' in read) {
        replays++;
        expect(read.replay).toEqual({ result: { id: charge.requestId, creditsRemaining: expect.any(Number) } });
        expect(refunded).toBe(false);
        // The replay's own loss is then the last carrier's: refunded, once.
        expect(await refundUndelivered(sql, charge, 'client_closed')).toBe(true);
      } else {
        expect(read).toHaveProperty('claim');
        expect(refunded).toBe(true);
      }
      expect(await refundUndelivered(sql, charge, 'client_closed')).toBe(false);
    }
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 40, charges: [] });
    console.info(`statement race: ${replays} of 40 replay reads came first`);
  });

  it('keeps a charge while any carrier of its answer is not lost: three replays, four losses, refunded at the fourth', async () => {
    const sql = service.app.services.sql;
    const org = await setupBillingOrg(service, 5);
    const { key, charge } = await keyedCharge(org);
    for (let i = 0; i < 3; i++)
      expect(await beginIdempotentRequest(sql, org.organizationId, { key, fingerprint: 'f' }, 60_000)).toHaveProperty('replay');
    // Another body's refusal is no carrier.
    await expect(beginIdempotentRequest(sql, org.organizationId, { key, fingerprint: 'g' }, 60_000)).rejects.toThrow(/different body/);
    const refunds = [];
    for (let i = 0; i < 4; i++) refunds.push(await refundUndelivered(sql, charge, 'client_closed'));
    expect(refunds).toEqual([false, false, false, true]);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 5, charges: [] });
  });
});
