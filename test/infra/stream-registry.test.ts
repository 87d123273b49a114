import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { createStreamRegistry } from '../../src/infra/streams.js';

/** The stream registry's limits and its revocation re-check, on their own (over HTTP: test/notifications/watch-notifications.test.ts). */

const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('stream registry', () => {
  it('holds at most maxPerKey per key and maxTotal in all, and frees a slot on release', () => {
    const streams = createStreamRegistry({ maxPerKey: 2, maxTotal: 3, recheckMs: 60_000, activeKeys: async (ids) => new Set(ids), log });
    const a1 = streams.open('a');
    streams.open('a');
    expect(() => streams.open('a')).toThrow(AppError);
    streams.open('b');
    expect(() => streams.open('c')).toThrow(/as many streams/);
    a1.release();
    a1.release();
    expect(streams.size).toBe(2);
    streams.open('c');
    streams.drain();
    expect(() => streams.open('d')).toThrow(/shutting down/);
  });

  it('ends the streams of keys the check finds inactive, and only those it asked about', async () => {
    let revoked = new Set<string>();
    const check: { answer?: () => void } = {};
    const asked: string[][] = [];
    const streams = createStreamRegistry({
      maxPerKey: 5,
      maxTotal: 100,
      recheckMs: 20,
      log,
      // The check is slow: it answers only when the test says so.
      activeKeys: (ids) => {
        asked.push(ids);
        return new Promise((resolve) => (check.answer = () => resolve(new Set(ids.filter((id) => !revoked.has(id))))));
      },
    });
    const kept = streams.open('kept');
    const gone = streams.open('gone');
    while (!check.answer) await sleep(5);
    // Opened while the check is under way: not judged by an answer that never asked about it.
    const late = streams.open('late');
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
