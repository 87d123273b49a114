import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { createStreamRegistry, END_GRACE_MS, type StreamClient, type StreamRegistryOptions } from '../../src/infra/stream-registry.js';

/** The stream registry's limits, its revocation re-check and its watch of clients, on their own (over HTTP: test/notifications/watch-notifications.test.ts). */

const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection as the registry sees it: the test says how long it has stalled, and sees it disconnected. */
function fakeClient(): StreamClient & { stalled: number; disconnected: boolean } {
  const done: Array<() => void> = [];
  return {
    stalled: 0,
    disconnected: false,
    onDone: (callback) => void done.push(callback),
    stalledMs() {
      return this.stalled;
    },
    disconnect() {
      if (this.disconnected) return;
      this.disconnected = true;
      for (const callback of done.splice(0)) callback();
    },
  };
}

const limits = { maxPerKey: 5, maxPerUser: 10, maxPerOrganization: 200, maxTotal: 2000, idleTimeoutMs: 30_000, recheckMs: 60_000 };
const registry = (options: Partial<StreamRegistryOptions> = {}) =>
  createStreamRegistry({ ...limits, activeKeys: async (ids) => new Set(ids), log, ...options });
const owner = (keyId: string, userId = `user-${keyId}`, organizationId = `org-${userId}`) => ({ keyId, userId, organizationId });

describe('stream registry', () => {
  it('holds at most maxPerKey per key and maxTotal in all, and frees a slot on release', () => {
    const streams = registry({ maxPerKey: 2, maxTotal: 3 });
    const a1 = streams.open(owner('a'), fakeClient());
    streams.open(owner('a'), fakeClient());
    expect(() => streams.open(owner('a'), fakeClient())).toThrow(AppError);
    streams.open(owner('b'), fakeClient());
    expect(() => streams.open(owner('c'), fakeClient())).toThrow(/as many streams/);
    a1.release();
    a1.release();
    expect(streams.size).toBe(2);
    streams.open(owner('c'), fakeClient());
    streams.drain();
    expect(() => streams.open(owner('d'), fakeClient())).toThrow(/shutting down/);
  });

  it('holds at most maxPerUser per user whatever its keys, and maxPerOrganization per organization whatever its users', () => {
    const streams = registry({ maxPerUser: 3, maxPerOrganization: 5 });
    const user = (i: number) => owner(`key-${i}`, 'u1', 'o1');
    const held = [0, 1, 2].map((i) => streams.open(user(i), fakeClient()));
    const refusal = (() => {
      try {
        streams.open(user(3), fakeClient());
      } catch (error) {
        return error as AppError;
      }
    })();
    expect(refusal?.kind).toBe('concurrency_limit');
    expect(refusal?.message).toMatch(/per user/);
    expect(refusal?.headers).toEqual({ 'Retry-After': 1 });
    streams.open(owner('k4', 'u2', 'o1'), fakeClient());
    streams.open(owner('k5', 'u2', 'o1'), fakeClient());
    expect(() => streams.open(owner('k6', 'u3', 'o1'), fakeClient())).toThrow(/per organization/);
    // Another organization is not affected; a slot freed in the first is open again.
    streams.open(owner('k7', 'u4', 'o2'), fakeClient());
    held[0].release();
    streams.open(owner('k6', 'u3', 'o1'), fakeClient());
  });

  it('frees the slot when the response is over, and disconnects a client stalled for idleTimeoutMs', async () => {
    const streams = registry({ idleTimeoutMs: 200 });
    const reading = fakeClient();
    const stalled = fakeClient();
    const kept = streams.open(owner('a'), reading);
    const cut = streams.open(owner('b'), stalled);
    stalled.stalled = 199;
    await sleep(120);
    expect(stalled.disconnected).toBe(false);
    stalled.stalled = 200;
    await sleep(120);
    expect(stalled.disconnected).toBe(true);
    expect(cut.signal.reason).toBe('released');
    expect([reading.disconnected, kept.signal.aborted, streams.size]).toEqual([false, false, 1]);
  });

  it('disconnects at once a stream ended for overflow, and END_GRACE_MS after a shutdown a client that has not finished', async () => {
    const streams = registry();
    const behind = fakeClient();
    streams.open(owner('a'), behind).end('overflow');
    expect(behind.disconnected).toBe(true);
    const finishing = fakeClient();
    const stuck = fakeClient();
    const finished = streams.open(owner('b'), finishing);
    streams.open(owner('c'), stuck);
    streams.drain();
    finished.release(); // its last event was written
    await sleep(END_GRACE_MS - 200);
    expect(stuck.disconnected).toBe(false);
    await sleep(400);
    expect([stuck.disconnected, finishing.disconnected, streams.size]).toEqual([true, false, 0]);
  });

  it('ends the streams of keys the check finds inactive, and only those it asked about', async () => {
    let revoked = new Set<string>();
    const check: { answer?: () => void } = {};
    const asked: string[][] = [];
    const streams = registry({
      recheckMs: 20,
      // The check is slow: it answers only when the test says so.
      activeKeys: (ids) => {
        asked.push(ids);
        return new Promise((resolve) => (check.answer = () => resolve(new Set(ids.filter((id) => !revoked.has(id))))));
      },
    });
    const kept = streams.open(owner('kept'), fakeClient());
    const gone = streams.open(owner('gone'), fakeClient());
    while (!check.answer) await sleep(5);
    // Opened while the check is under way: not judged by an answer that never asked about it.
    const late = streams.open(owner('late'), fakeClient());
    revoked = new Set(['gone', 'late']);
    (check.answer as () => void)();
    await sleep(0);
    expect([kept.signal.aborted, gone.signal.aborted, late.signal.aborted]).toEqual([false, true, false]);
    expect(gone.signal.reason).toBe('revoked');
    delete check.answer;
    while (!check.answer) await sleep(5);
    (check.answer as () => void)();
    await sleep(0);
    expect(late.signal.reason).toBe('revoked');
    expect(asked[1]).toContain('late');
    streams.drain();
    expect(kept.signal.reason).toBe('shutdown');
    for (const lease of [kept, gone, late]) lease.release();
  });
});
