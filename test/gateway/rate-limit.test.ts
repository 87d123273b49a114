import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  // Small windows, and client IPs taken from X-Forwarded-For so this file's IP window is private.
  service = await startService({ GATEWAY_RATE_LIMIT_PER_MIN: '5', AUTH_FAILURE_LIMIT_PER_MIN: '3', TRUST_PROXY: 'true' });
});
afterAll(() => service?.close());

const list = { operationId: 'listNotifications', variables: {} };

it('answers 429 rate_limited with Retry-After past the per-key window, counting every request after the credential', async () => {
  const user = await service.provision({ scopes: ['READ'] });
  const statuses: number[] = [];
  // Errors after the credential check count too: two 404s and a 422 use up the window.
  statuses.push((await service.call(user.key, { operationId: 'nope' })).status);
  statuses.push((await service.call(user.key, { operationId: 'nope' })).status);
  statuses.push((await service.call(user.key, '[]')).status);
  statuses.push((await service.call(user.key, list)).status);
  statuses.push((await service.call(user.key, list)).status);
  const limited = await service.call(user.key, list);
  expect(statuses).toEqual([404, 404, 422, 200, 200]);
  expect(limited.status).toBe(429);
  expect(limited.body.error.code).toBe('rate_limited');
  expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  const retryAfter = Number(limited.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  // Another key has its own window.
  const other = await service.provision({ scopes: ['READ'] });
  expect((await service.call(other.key, list)).status).toBe(200);
});

it('checks the rate window before the body size', async () => {
  const user = await service.provision({ scopes: ['READ'] });
  for (let i = 0; i < 5; i++) await service.call(user.key, list);
  const huge = JSON.stringify({ operationId: 'listNotifications', variables: { searchTerm: 'x'.repeat(70_000) } });
  expect((await service.call(user.key, huge)).status).toBe(429);
});

it('counts requests without a valid credential per client IP, slowing key guessing', async () => {
  const ip = `10.${randomInt(255)}.${randomInt(255)}.${randomInt(255)}`;
  const headers = { 'x-forwarded-for': ip };
  const results = [];
  for (let i = 0; i < 4; i++) results.push(await service.call(`gk_${'B'.repeat(40)}`, list, { headers }));
  expect(results.map((r) => r.status)).toEqual([401, 401, 401, 429]);
  expect(results[0].headers.get('x-ratelimit-limit')).toBe('3');
  expect(results[2].headers.get('x-ratelimit-remaining')).toBe('0');
  expect(results[3].body.error.code).toBe('rate_limited');
  expect(results[3].headers.get('retry-after')).not.toBeNull();
  // A valid key from the same IP is not affected: it has its own window.
  const user = await service.provision({ scopes: ['READ'] });
  expect((await service.call(user.key, list, { headers })).status).toBe(200);
});
