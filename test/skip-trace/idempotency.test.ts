/**
 * `Idempotency-Key` on `POST /api/v1/skiptrace` (Stripe's model), black-box over HTTP against the
 * fake vendor: replays, refusals, what is stored and what is not, aborts, timeouts, leases of
 * crashed claims, the expiry sweep, and a race of 50 requests on one key.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FakeVendor } from '../support/fake-vendor.js';
import type { HttpResult, TestService } from '../support/harness.js';
import {
  addCredits,
  eventually,
  ledger,
  postTrace,
  raceOneKey,
  setupBillingOrg,
  sleep,
  uniqueAddress,
  useServiceWithVendor,
} from '../support/billing.js';

const TIMEOUT_MS = 800;

let vendor: FakeVendor;
let service: TestService;

useServiceWithVendor(
  {
    SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS),
    SKIPTRACE_MAX_IN_FLIGHT: '100',
    SKIPTRACE_IDEMPOTENCY_SWEEP_INTERVAL_MS: '100',
  },
  (started) => ({ service, vendor } = started),
);

const keyed = (key: string) => ({ 'idempotency-key': key });
const codeOf = (result: HttpResult) => ({ status: result.status, code: result.body?.error?.code });
const replayed = (result: HttpResult) => result.headers.get('idempotent-replayed');

/** An organization with `credits`, a new key and body, and the vendor answering after `delayMs`. */
async function slowKeyedTrace(delayMs: number, credits = 5) {
  vendor.setMode('slow');
  vendor.setDelay(delayMs);
  return { org: await setupBillingOrg(service, credits), key: randomUUID(), body: { address: uniqueAddress() } };
}

async function auditOutcomes(organizationId: string): Promise<string[]> {
  const rows = await service.sql(`select outcome from skip_trace_requests where organization_id = ? order by created_at, id`, [
    organizationId,
  ]);
  return rows.map((row) => row.outcome as string).sort();
}

describe('Idempotency-Key: replays', () => {
  it('replays the first 200 (same status, body and id, same billing headers, Idempotent-Replayed: true) without a charge or a vendor call', async () => {
    const org = await setupBillingOrg(service, 5);
    const key = randomUUID();
    const address = uniqueAddress();
    const first = await postTrace(service, org.key, { address }, keyed(key));
    expect(first.status).toBe(200);
    expect(first.headers.get('x-credits-remaining')).toBe('4');
    expect(first.headers.get('x-cache')).toBe('miss');
    expect(replayed(first)).toBeNull();

    // The same body, keys in another order and other whitespace: equal once parsed.
    const reordered = `{ "address": { "zip": "78701", "state": "TX", "city": "Austin", "line1": ${JSON.stringify(address.line1)} } }`;
    const second = await postTrace(service, org.key, reordered, keyed(key));
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(second.body.id).toBe(first.body.id);
    expect(replayed(second)).toBe('true');
    expect(second.headers.get('x-credits-remaining')).toBe('4');
    expect(second.headers.get('x-cache')).toBe('miss');

    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [first.body.id] });
    expect(await auditOutcomes(org.organizationId)).toEqual(['records_found', 'replayed']);
  });

  it('counts a replay against the rate window', async () => {
    const org = await setupBillingOrg(service, 5);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const first = await postTrace(service, org.key, body, keyed(key));
    const second = await postTrace(service, org.key, body, keyed(key));
    expect(replayed(second)).toBe('true');
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
  });

  it('without a key, a repeat runs anew: X-Cache hit, a new id, one more charge, X-Credits-Remaining one lower', async () => {
    const org = await setupBillingOrg(service, 5);
    const body = { address: uniqueAddress() };
    const first = await postTrace(service, org.key, body);
    const second = await postTrace(service, org.key, body);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.id).not.toBe(first.body.id);
    expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['miss', 'hit']);
    expect([first.headers.get('x-credits-remaining'), second.headers.get('x-credits-remaining')]).toEqual(['4', '3']);
    expect(replayed(second)).toBeNull();
  });

  it('keeps keys per organization: the same key and body in another organization runs and is charged there', async () => {
    const [a, b] = await Promise.all([setupBillingOrg(service, 2), setupBillingOrg(service, 2)]);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const first = await postTrace(service, a.key, body, keyed(key));
    const other = await postTrace(service, b.key, body, keyed(key));
    expect([first.status, other.status]).toEqual([200, 200]);
    expect(other.body.id).not.toBe(first.body.id);
    expect(replayed(other)).toBeNull();
    expect((await ledger(service, b.organizationId)).charges).toEqual([other.body.id]);
  });
});

describe('Idempotency-Key: refusals', () => {
  it('answers 422 idempotency_key_reused to the same key with a different body, charging nothing', async () => {
    const org = await setupBillingOrg(service, 5);
    const key = randomUUID();
    const first = await postTrace(service, org.key, { address: uniqueAddress() }, keyed(key));
    const reused = await postTrace(service, org.key, { address: uniqueAddress() }, keyed(key));
    expect(codeOf(reused)).toEqual({ status: 422, code: 'idempotency_key_reused' });
    expect(reused.body.error.details).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [first.body.id] });
  });

  it('answers 409 idempotency_key_in_use while the first request is in flight, then replays it', async () => {
    const { org, key, body } = await slowKeyedTrace(400);
    const first = postTrace(service, org.key, body, keyed(key));
    await sleep(150);
    const during = await postTrace(service, org.key, body, keyed(key));
    expect(codeOf(during)).toEqual({ status: 409, code: 'idempotency_key_in_use' });
    // A different body is refused as a reuse even while the first is in flight.
    expect(codeOf(await postTrace(service, org.key, { address: uniqueAddress() }, keyed(key)))).toEqual({
      status: 422,
      code: 'idempotency_key_reused',
    });
    const done = await first;
    const after = await postTrace(service, org.key, body, keyed(key));
    expect(after.body.id).toBe(done.body.id);
    expect(replayed(after)).toBe('true');
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [done.body.id] });
  });

  it('answers any header value with 200 (a valid key, after HTTP trims it) or 422 naming the header, never 5xx; one charge per new key', async () => {
    const org = await setupBillingOrg(service, 1000);
    const body = { address: uniqueAddress() };
    // Any character a client can put in a header value (tab, visible ASCII, obs-text 0x80-0xFF; fetch refuses the other
    // controls), and lengths around the limit.
    const headerChar = fc
      .integer({ min: 0x1f, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => (c === 0x1f ? '\t' : String.fromCharCode(c)));
    const value = fc.oneof(
      fc.string({ unit: headerChar, maxLength: 300 }),
      fc.string({ unit: 'grapheme-ascii', minLength: 250, maxLength: 260 }),
    );
    const seen = new Map<string, string>();
    await fc.assert(
      fc.asyncProperty(value, async (raw) => {
        const result = await postTrace(service, org.key, body, keyed(raw));
        const sent = raw.replace(/^[ \t]+|[ \t]+$/g, '');
        if (/^[\x20-\x7E]{1,255}$/.test(sent)) {
          expect(result.status, JSON.stringify(raw)).toBe(200);
          const first = seen.get(sent);
          if (first) expect([result.body.id, replayed(result)]).toEqual([first, 'true']);
          else seen.set(sent, result.body.id);
        } else {
          expect(codeOf(result), JSON.stringify(raw)).toEqual({ status: 422, code: 'invalid_request' });
          expect(result.body.error.details).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
        }
      }),
      { numRuns: 80 },
    );
    expect((await ledger(service, org.organizationId)).charges).toEqual([...seen.values()].sort());
  }, 60_000);

  it('refuses a malformed Idempotency-Key with 422 invalid_request naming the header: empty, 256 characters, non-ASCII, a control character, sent twice', async () => {
    const org = await setupBillingOrg(service, 5);
    const body = { address: uniqueAddress() };
    for (const bad of ['', 'k'.repeat(256), 'café', 'a\tb']) {
      const result = await postTrace(service, org.key, body, keyed(bad));
      expect(codeOf(result), JSON.stringify(bad)).toEqual({ status: 422, code: 'invalid_request' });
      expect(result.body.error.details).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
    }
    const twice = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const url = new URL('/api/v1/skiptrace', service.baseUrl);
      const req = httpRequest(
        url,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json', 'idempotency-key': ['one', 'two'] },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    expect({ status: twice.status, code: twice.body.error.code }).toEqual({ status: 422, code: 'invalid_request' });
    // The longest key and every printable character are fine.
    const longest = await postTrace(service, org.key, body, keyed(`${' !~'}${'k'.repeat(252)}`));
    expect(longest.status).toBe(200);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [longest.body.id] });
  });
});

describe('Idempotency-Key: what is stored', () => {
  it('does not store a body refused by validation (422 before the key is claimed): the corrected body runs with the same key', async () => {
    const org = await setupBillingOrg(service, 5);
    const key = randomUUID();
    const bad = await postTrace(service, org.key, { address: { ...uniqueAddress(), zip: '7870' } }, keyed(key));
    expect(codeOf(bad)).toEqual({ status: 422, code: 'invalid_request' });
    const good = await postTrace(service, org.key, { address: uniqueAddress() }, keyed(key));
    expect(good.status).toBe(200);
    expect(replayed(good)).toBeNull();
  });

  it('stores a 402 and replays it (same body, request id included) even after credits are added', async () => {
    const org = await setupBillingOrg(service, 0);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    const first = await postTrace(service, org.key, body, keyed(key));
    expect(codeOf(first)).toEqual({ status: 402, code: 'insufficient_credits' });
    await addCredits(service, org.organizationId, 3);
    const again = await postTrace(service, org.key, body, keyed(key));
    expect(again.status).toBe(402);
    expect(again.body).toEqual(first.body);
    expect(replayed(again)).toBe('true');
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 3, charges: [] });
    // A new key runs anew.
    expect((await postTrace(service, org.key, body, keyed(randomUUID()))).status).toBe(200);
  });

  it('does not store a 500: the retry with the key runs anew', async () => {
    const org = await setupBillingOrg(service, 5);
    const key = randomUUID();
    const body = { address: uniqueAddress() };
    vendor.setMode('failing');
    expect(codeOf(await postTrace(service, org.key, body, keyed(key)))).toEqual({ status: 500, code: 'internal_error' });
    vendor.setMode('ok');
    const retry = await postTrace(service, org.key, body, keyed(key));
    expect(retry.status).toBe(200);
    expect(replayed(retry)).toBeNull();
    expect(vendor.calls).toHaveLength(2);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [retry.body.id] });
  });

  it("does not store a 504: the key's retry finds the cached trace once it lands, charged once", async () => {
    const { org, key, body } = await slowKeyedTrace(TIMEOUT_MS + 400);
    const first = await postTrace(service, org.key, body, keyed(key));
    expect(codeOf(first)).toEqual({ status: 504, code: 'timeout' });
    await sleep(600); // the vendor answers in the background and the result is cached
    const retry = await postTrace(service, org.key, body, keyed(key));
    expect(retry.status).toBe(200);
    expect(retry.headers.get('x-cache')).toBe('hit');
    expect(replayed(retry)).toBeNull();
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [retry.body.id] });
  });

  it('frees the key of a caller that went away mid-flight: the retry runs and only the delivered answer is charged', async () => {
    const { org, key, body } = await slowKeyedTrace(500);
    const abort = new AbortController();
    const gone = postTrace(service, org.key, body, keyed(key), abort.signal).catch(() => 'aborted');
    await sleep(150);
    abort.abort();
    expect(await gone).toBe('aborted');
    const retry = await eventually(async () => {
      const result = await postTrace(service, org.key, body, keyed(key));
      return result.status === 409 ? undefined : result;
    });
    expect(retry.status).toBe(200);
    expect(replayed(retry)).toBeNull();
    await sleep(700); // the abandoned request settles (the trace it waited for has landed)
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 4, charges: [retry.body.id] });
    expect(await auditOutcomes(org.organizationId)).toEqual(['client_closed', 'records_found']);
  });
});

describe('Idempotency-Key: crashed claims and expiry', () => {
  async function plantClaim(organizationId: string, key: string, fingerprint: string, leaseSeconds: number) {
    await service.sql(
      `insert into skip_trace_idempotency_keys (organization_id, idempotency_key, fingerprint, claim_token, lease_expires_at, expires_at)
       values (?, ?, ?, ?, now() + make_interval(secs => ?), now() + interval '24 hours')`,
      [organizationId, key, fingerprint, randomUUID(), leaseSeconds],
    );
  }
  const fingerprintOf = async (organizationId: string, key: string) =>
    (
      await service.sql(`select fingerprint from skip_trace_idempotency_keys where organization_id = ? and idempotency_key = ?`, [
        organizationId,
        key,
      ])
    )[0]?.fingerprint as string | undefined;

  it('holds a claim left by a crashed instance until its lease runs out, then lets the key run', async () => {
    const org = await setupBillingOrg(service, 5);
    const body = { address: uniqueAddress() };
    // The fingerprint of this body, as the service computes it.
    const probeKey = randomUUID();
    await postTrace(service, org.key, body, keyed(probeKey));
    const fingerprint = (await fingerprintOf(org.organizationId, probeKey))!;

    const held = randomUUID();
    await plantClaim(org.organizationId, held, fingerprint, 60);
    expect(codeOf(await postTrace(service, org.key, body, keyed(held)))).toEqual({ status: 409, code: 'idempotency_key_in_use' });

    const lapsed = randomUUID();
    await plantClaim(org.organizationId, lapsed, fingerprint, -1);
    const taken = await postTrace(service, org.key, body, keyed(lapsed));
    expect(taken.status).toBe(200);
    expect(replayed(taken)).toBeNull();
  });

  it('forgets a key after 24 h (an expired key runs anew, even with another body) and sweeps expired rows, leaving live ones', async () => {
    const org = await setupBillingOrg(service, 5);
    const [old, live] = [randomUUID(), randomUUID()];
    await postTrace(service, org.key, { address: uniqueAddress() }, keyed(old));
    await postTrace(service, org.key, { address: uniqueAddress() }, keyed(live));
    const expire = () =>
      service.sql(
        `update skip_trace_idempotency_keys set expires_at = now() - interval '1 second' where organization_id = ? and idempotency_key = ?`,
        [org.organizationId, old],
      );
    await expire();
    const anew = await postTrace(service, org.key, { address: uniqueAddress() }, keyed(old));
    expect(anew.status).toBe(200);
    expect(replayed(anew)).toBeNull();

    await expire();
    await eventually(async () => ((await fingerprintOf(org.organizationId, old)) === undefined ? true : undefined), 3000);
    expect(await fingerprintOf(org.organizationId, live)).toBeDefined();
  });
});

describe('Idempotency-Key: racing', () => {
  it('50 concurrent requests with one key: one charge, one vendor call, every answer the replay of one id or 409', async () => {
    const { org, key, body } = await slowKeyedTrace(200, 10);
    const id = await raceOneKey(() => postTrace(service, org.key, body, keyed(key)));
    expect(vendor.calls).toHaveLength(1);
    expect(await ledger(service, org.organizationId)).toEqual({ credits: 9, charges: [id] });
  });
});
