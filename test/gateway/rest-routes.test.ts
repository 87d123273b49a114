import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type HttpResult, type TestService } from '../support/harness.js';
import { REST_STATUS } from '../support/contract.js';

/**
 * Every REST route is a declaration run by one handler, so every route must answer the checks
 * they share the same way: each case below runs against each route.
 */
let service: TestService;
const keys: Record<'gateway' | 'skipTrace', string> = { gateway: '', skipTrace: '' };

const ROUTES = [
  { path: '/api/v1/call', key: 'gateway', otherKey: 'skipTrace', validBody: { operationId: 'getNotificationCounts', variables: {} } },
  {
    path: '/api/v1/skiptrace',
    key: 'skipTrace',
    otherKey: 'gateway',
    validBody: { address: { line1: '1 Main St', city: 'Austin', state: 'TX', zip: '78701' } },
  },
] as const;

beforeAll(async () => {
  service = await startService({ GATEWAY_RATE_LIMIT_PER_MIN: '40', SKIPTRACE_RATE_LIMIT_PER_MIN: '40' });
  const user = await service.provision();
  keys.gateway = user.key;
  await service.graphql(`mutation($id: ID!) { setSkipTraceEnabled(organizationId: $id, enabled: true) { id } }`, {
    id: user.organizationId,
  });
  const issued = await service.graphql(`mutation($id: ID!) { generateSkipTraceKey(organizationId: $id) { secret } }`, {
    id: user.organizationId,
  });
  keys.skipTrace = issued.body.data.generateSkipTraceKey.secret;
});
afterAll(() => service?.close());

const post = (path: string, init: { key?: string; body?: string; type?: string }) =>
  service.request(path, {
    method: 'POST',
    headers: {
      ...(init.type === undefined ? { 'content-type': 'application/json' } : init.type ? { 'content-type': init.type } : {}),
      ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
    },
    body: init.body,
  });

function expectError(result: HttpResult, code: string) {
  expect({ status: result.status, code: result.body?.error?.code }).toEqual({ status: REST_STATUS[code], code });
  expect(result.body.error.message).toEqual(expect.any(String));
  expect(result.headers.get('x-request-id')).toBe(result.body.error.requestId);
}

describe.each(ROUTES)('$path answers the shared checks like every REST route', (route) => {
  it('refuses a missing credential and the other kind of key with 401 invalid_key', async () => {
    expectError(await post(route.path, { body: JSON.stringify(route.validBody) }), 'invalid_key');
    expectError(await post(route.path, { key: keys[route.otherKey], body: JSON.stringify(route.validBody) }), 'invalid_key');
  });

  it('sets the window headers on answers to a valid key, errors included', async () => {
    const result = await post(route.path, { key: keys[route.key], body: '{' });
    expectError(result, 'invalid_request');
    for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])
      expect(result.headers.get(header)).toMatch(/^\d+$/);
  });

  it('refuses other media types (415), oversized bodies (413), unreadable JSON and non-objects (422)', async () => {
    const key = keys[route.key];
    expectError(await post(route.path, { key, type: 'text/plain', body: JSON.stringify(route.validBody) }), 'unsupported_media_type');
    expectError(
      await post(route.path, { key, body: JSON.stringify({ ...route.validBody, pad: 'x'.repeat(70 * 1024) }) }),
      'payload_too_large',
    );
    expectError(await post(route.path, { key, body: '{"a":' }), 'invalid_request');
    expectError(await post(route.path, { key, body: '[]' }), 'invalid_request');
    expectError(await post(route.path, { key, body: '"text"' }), 'invalid_request');
    expectError(await post(route.path, { key, body: JSON.stringify({ a: '\u0000' }) }), 'invalid_request');
  });

  it('names an unknown body field in details', async () => {
    const result = await post(route.path, { key: keys[route.key], body: JSON.stringify({ ...route.validBody, surplus: 1 }) });
    expectError(result, 'invalid_request');
    expect(result.body.error.details.map((d: { path: string }) => d.path)).toContain('surplus');
  });

  it('answers other methods with 405 and Allow: POST', async () => {
    const result = await service.request(route.path, { method: 'GET', headers: { authorization: `Bearer ${keys[route.key]}` } });
    expectError(result, 'method_not_allowed');
    expect(result.headers.get('allow')).toBe('POST');
  });
});

describe('the rate window, on every REST route', () => {
  it.each(ROUTES)('$path refuses past the window with 429 rate_limited and Retry-After', async (route) => {
    let last: HttpResult | undefined;
    for (let i = 0; i < 45 && last?.status !== 429; i++) last = await post(route.path, { key: keys[route.key], body: '{' });
    expectError(last!, 'rate_limited');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
