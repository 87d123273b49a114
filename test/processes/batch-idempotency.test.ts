/**
 * A keyed batch charges each item once, whatever happens to the process serving it: killed
 * outright after some items were charged and before its answer was stored, the key's retry (on
 * another process, once the dead claim's lease ran out) charges only the items not charged yet
 * and answers every item; the same keyed batch sent to two processes at once charges each item
 * once, and both answers are the same one (or one is the in-flight conflict).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, vendorEnv, type FakeVendor } from '../support/fake-vendor.js';
import { sleep } from '../support/billing.js';
import {
  json,
  ledgerOf,
  requireRealBackends,
  skipTraceOrganization,
  spawnService,
  useTwoProcesses,
  type ServiceProcess,
} from './spawn-service.js';

const backends = requireRealBackends();
const ITEMS = 40;
const CREDITS = 1000;
// Short, so the killed process's claim (the trace timeout plus a margin) runs out soon.
const TIMEOUT_MS = 3000;

const batchBody = (tag: string) => ({
  items: Array.from({ length: ITEMS }, (_, i) => ({
    key: `row-${i}`,
    address: { line1: `${i} ${tag} Batch Street`, city: 'Austin', state: 'TX', zip: '78701' },
  })),
});

const sendBatch = (service: ServiceProcess, stk: string, body: unknown, key: string, signal?: AbortSignal) =>
  json(`${service.url}/api/v1/skiptrace/batch`, { bearer: stk, body: JSON.stringify(body), headers: { 'idempotency-key': key }, signal });

/** Every item charged once: one charge per charged result id, and the balance down by as many. */
async function expectChargedOnce(db: pg.Client, organizationId: string, response: { status: number; body: any }) {
  expect(response.status).toBe(200);
  const results = response.body.results as { index: number; status: string; id: string }[];
  expect(results.map((r) => r.status)).toEqual(Array(ITEMS).fill('records_found'));
  expect(results.map((r) => r.index)).toEqual(Array.from({ length: ITEMS }, (_, i) => i));
  const charged = await ledgerOf(db, organizationId);
  expect(charged.charges.sort()).toEqual(results.map((r) => r.id).sort());
  expect(charged.credits).toBe(CREDITS - ITEMS);
  expect(response.body.charged).toBe(ITEMS);
}

describe('a keyed batch whose process is killed after some item charges', () => {
  let vendor: FakeVendor;
  let db: pg.Client;
  let env: Record<string, string>;
  const running: ServiceProcess[] = [];
  const name = `batchkill_${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    vendor = await startFakeVendor();
    const admin = new pg.Client({ connectionString: backends.databaseUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const databaseUrl = Object.assign(new URL(backends.databaseUrl), { pathname: `/${name}` }).toString();
    env = { ...vendorEnv(vendor), DATABASE_URL: databaseUrl, REDIS_URL: backends.redisUrl, SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS) };
    db = new pg.Client({ connectionString: databaseUrl });
  });
  afterAll(async () => {
    for (const service of running) await service.stop('SIGKILL');
    await db?.end();
    await vendor?.close();
    const dropper = new pg.Client({ connectionString: backends.databaseUrl });
    await dropper.connect();
    await dropper.query(`drop database if exists ${name} with (force)`);
    await dropper.end();
  });

  it("the key's retry charges only the items not charged yet, and answers every item", async () => {
    const first = await spawnService(env);
    running.push(first);
    await db.connect();
    const org = await skipTraceOrganization(first, first, CREDITS);
    // Slow enough that the kill lands between the items' charges: 40 items, 10 at a time, 400 ms each.
    vendor.setMode('slow');
    vendor.setDelay(400);
    const key = randomUUID();
    const body = batchBody(randomUUID().slice(0, 8));
    const abandoned = sendBatch(first, org.stk, body, key).catch(() => null);
    for (const started = Date.now(); (await ledgerOf(db, org.organizationId)).charges.length < 5; await sleep(10))
      if (Date.now() - started > 20_000) throw new Error('no item was charged');
    first.child.kill('SIGKILL');
    await first.exited;
    const killedAt = Date.now();
    expect(await abandoned).toBeNull();
    const before = await ledgerOf(db, org.organizationId);
    expect(before.charges.length).toBeGreaterThan(0);
    expect(before.charges.length).toBeLessThan(ITEMS);

    vendor.setMode('ok');
    // The dead process's single-flight locks (60 s) are taken over once its liveness key is gone
    // (10 s), before its claim's lease (33 s) lets the retry run: no item waits on them.
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    const second = await spawnService(env);
    running.push(second);
    // The dead claim holds the key (409) until its lease runs out; then the retry runs.
    let retried: Awaited<ReturnType<typeof sendBatch>>;
    for (const started = Date.now(); ; await sleep(500)) {
      retried = await sendBatch(second, org.stk, body, key);
      if (retried.status !== 409 || Date.now() - started > 90_000) break;
      expect(retried.body.error.code).toBe('idempotency_key_in_use');
    }
    await expectChargedOnce(db, org.organizationId, retried);
    // The items charged before the kill keep their first charge's id.
    const ids = new Set((retried.body.results as { id: string }[]).map((r) => r.id));
    expect(before.charges.every((id) => ids.has(id))).toBe(true);
    // And the answer is stored: the next retry replays it, charging nothing.
    const replay = await sendBatch(second, org.stk, body, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.results).toEqual(retried.body.results);
    expect((await ledgerOf(db, org.organizationId)).credits).toBe(CREDITS - ITEMS);
  });
});

describe('the same keyed batch sent to two processes at once', () => {
  let vendor: FakeVendor;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let db: pg.Client;
  useTwoProcesses(
    (started) => ({ ...vendorEnv(started), SKIPTRACE_TIMEOUT_MS: String(TIMEOUT_MS) }),
    (started) => ({ vendor, a, b, db } = started),
  );

  it('charges each item once; both answers are the same one, or one is idempotency_key_in_use', async () => {
    vendor.setMode('slow');
    vendor.setDelay(200);
    const org = await skipTraceOrganization(a, b, CREDITS);
    const key = randomUUID();
    const body = batchBody(randomUUID().slice(0, 8));
    const answers = await Promise.all([sendBatch(a, org.stk, body, key), sendBatch(b, org.stk, body, key)]);
    const ok = answers.filter((r) => r.status === 200);
    const conflicts = answers.filter((r) => r.status !== 200);
    expect(conflicts.map((r) => `${r.status} ${r.body.error?.code}`)).toEqual(conflicts.map(() => '409 idempotency_key_in_use'));
    expect(ok.length).toBeGreaterThan(0);
    for (const answer of ok) expect(answer.body.results).toEqual(ok[0].body.results);
    await expectChargedOnce(db, org.organizationId, ok[0]);
    // Whichever answered first, a later request with the key replays that answer.
    const replay = await sendBatch(b, org.stk, body, key);
    expect(replay.body.results).toEqual(ok[0].body.results);
    expect((await ledgerOf(db, org.organizationId)).credits).toBe(CREDITS - ITEMS);
  });
});
