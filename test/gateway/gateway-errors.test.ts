import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
let reader: Provisioned;
let writer: Provisioned;
let readWrite: Provisioned;

beforeAll(async () => {
  service = await startService();
  [reader, writer, readWrite] = await Promise.all([
    service.provision({ scopes: ['READ'] }),
    service.provision({ scopes: ['WRITE'] }),
    service.provision({ scopes: ['READ', 'WRITE'] }),
  ]);
});
afterAll(() => service?.close());

const list = { operationId: 'listNotifications', variables: {} };

function expectError(result: { status: number; body: any }, status: number, code: string) {
  expect({ status: result.status, code: result.body?.error?.code }).toEqual({ status, code });
  expect(typeof result.body.error.message).toBe('string');
}

describe('credentials (401 invalid_key)', () => {
  it('refuses a request without Authorization', async () => {
    expectError(await service.call(null, list), 401, 'invalid_key');
  });
  it('refuses a malformed bearer', async () => {
    expectError(await service.call('gk_short', list), 401, 'invalid_key');
    expectError(await service.call(null, list, { headers: { authorization: 'Basic abc' } }), 401, 'invalid_key');
  });
  it('refuses an unknown well-formed key', async () => {
    expectError(await service.call(`gk_${'A'.repeat(40)}`, list), 401, 'invalid_key');
  });
  it('refuses a revoked key on the very next request', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    expect((await service.call(user.key, list)).status).toBe(200);
    const revoked = await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: user.keyId });
    expect(revoked.body.data.revokeApiKey).toBe(true);
    expectError(await service.call(user.key, list), 401, 'invalid_key');
  });
  it('refuses the platform token, which is for /graphql only', async () => {
    expectError(await service.call(service.platformToken, list), 401, 'invalid_key');
  });
  it('checks the credential before the body', async () => {
    expectError(await service.call(null, 'not json'), 401, 'invalid_key');
    expectError(await service.call(null, { operationId: 'nope' }), 401, 'invalid_key');
  });
});

describe('body shape (422 invalid_request)', () => {
  it.each([
    ['malformed JSON', '{"operationId":'],
    ['a JSON array', '[]'],
    ['a JSON string', '"listNotifications"'],
    ['null', 'null'],
    ['an empty body', ''],
  ])('refuses %s', async (_name, body) => {
    expectError(await service.call(readWrite.key, body), 422, 'invalid_request');
  });
  it('refuses unknown top-level fields, naming them', async () => {
    const result = await service.call(readWrite.key, { ...list, extra: 1 });
    expectError(result, 422, 'invalid_request');
    expect(result.body.error.details).toEqual([{ path: 'extra', message: expect.any(String) }]);
  });
  it('refuses a non-string operationId and non-object variables', async () => {
    expectError(await service.call(readWrite.key, { operationId: 42 }), 422, 'invalid_request');
    expectError(await service.call(readWrite.key, { operationId: 'listNotifications', variables: [] }), 422, 'invalid_request');
    expectError(await service.call(readWrite.key, { operationId: 'listNotifications', variables: 'x' }), 422, 'invalid_request');
  });
  it('checks the body shape before the operationId', async () => {
    expectError(await service.call(readWrite.key, { operationId: 'nope', extra: true }), 422, 'invalid_request');
  });
  it('answers 415 unsupported_media_type to a body that is not application/json, after the credential and before the body', async () => {
    for (const contentType of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'application/jsonx', '']) {
      expectError(
        await service.call(readWrite.key, JSON.stringify(list), { headers: { 'content-type': contentType } }),
        415,
        'unsupported_media_type',
      );
    }
    const noContentType = await service.request('/api/v1/call', {
      method: 'POST',
      headers: { authorization: `Bearer ${readWrite.key}` },
      body: new Blob([JSON.stringify(list)]),
    });
    expectError(noContentType, 415, 'unsupported_media_type');
    expectError(await service.call(null, JSON.stringify(list), { headers: { 'content-type': 'text/plain' } }), 401, 'invalid_key');
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      expect(
        (await service.call(readWrite.key, JSON.stringify(list), { headers: { 'content-type': contentType } })).status,
        contentType,
      ).toBe(200);
    }
  });
});

describe('operation and scope', () => {
  it('answers 404 unknown_operation for an unpublished operationId', async () => {
    expectError(await service.call(readWrite.key, { operationId: 'deleteEverything' }), 404, 'unknown_operation');
    expectError(await service.call(readWrite.key, { operationId: 'notifications' }), 404, 'unknown_operation');
  });
  it('answers 403 insufficient_scope when the key lacks the scope', async () => {
    expectError(await service.call(writer.key, list), 403, 'insufficient_scope');
    expectError(await service.call(writer.key, { operationId: 'getNotificationCounts' }), 403, 'insufficient_scope');
    expectError(
      await service.call(reader.key, { operationId: 'markNotificationsRead', variables: { notificationIds: [], isSeen: true } }),
      403,
      'insufficient_scope',
    );
  });
  it('checks the scope before the variables', async () => {
    expectError(await service.call(writer.key, { operationId: 'listNotifications', variables: { limit: 'x' } }), 403, 'insufficient_scope');
  });
  it('lets each scope do its operations', async () => {
    expect((await service.call(reader.key, { operationId: 'getAvailableNotificationTypes' })).status).toBe(200);
    const marked = await service.call(writer.key, {
      operationId: 'markNotificationsRead',
      variables: { notificationIds: [], isSeen: true },
    });
    expect(marked.status).toBe(200);
    expect(marked.body).toEqual({ data: { success: true, updatedCount: 0 } });
  });
});

describe('variables (422 invalid_request with details)', () => {
  const bad = async (operationId: string, variables: unknown, path: string) => {
    const result = await service.call(readWrite.key, { operationId, variables });
    expectError(result, 422, 'invalid_request');
    expect(result.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  };
  it('refuses unknown variables, naming them', () => bad('listNotifications', { limit: 5, pageSize: 5 }, 'variables.pageSize'));
  it('refuses variables to an operation that takes none', () => bad('getAvailableNotificationTypes', { x: 1 }, 'variables.x'));
  it('refuses limit out of 1..50 and non-integers', async () => {
    await bad('listNotifications', { limit: 0 }, 'variables.limit');
    await bad('listNotifications', { limit: 51 }, 'variables.limit');
    await bad('listNotifications', { limit: 2.5 }, 'variables.limit');
    await bad('listNotifications', { limit: '10' }, 'variables.limit');
  });
  it('refuses wrong types', async () => {
    await bad('listNotifications', { seen: 'yes' }, 'variables.seen');
    await bad('listNotifications', { searchTerm: 5 }, 'variables.searchTerm');
    await bad('getNotificationCounts', { notificationTypeFilter: ['deal_created'] }, 'variables.notificationTypeFilter');
    await bad('markNotificationsRead', { notificationIds: 'abc', isSeen: true }, 'variables.notificationIds');
    await bad('markNotificationsRead', { notificationIds: [1, 2], isSeen: true }, 'variables.notificationIds.0');
  });
  it('refuses missing required variables', async () => {
    await bad('markNotificationsRead', { notificationIds: [] }, 'variables.isSeen');
    await bad('markNotificationsRead', {}, 'variables.notificationIds');
  });
  it('refuses a searchTerm over 200 characters and more than 500 ids', async () => {
    await bad('listNotifications', { searchTerm: 'x'.repeat(201) }, 'variables.searchTerm');
    await bad(
      'markNotificationsRead',
      { notificationIds: Array.from({ length: 501 }, () => randomUUID()), isSeen: true },
      'variables.notificationIds',
    );
  });
  it('accepts the boundaries', async () => {
    expect(
      (await service.call(readWrite.key, { operationId: 'listNotifications', variables: { limit: 50, searchTerm: 'x'.repeat(200) } }))
        .status,
    ).toBe(200);
    expect((await service.call(readWrite.key, { operationId: 'listNotifications', variables: { limit: 1 } })).status).toBe(200);
  });
});

describe('routes and sizes', () => {
  it('answers 404 not_found for unknown routes and 405 for wrong methods', async () => {
    expectError(await service.request('/api/v1/nope'), 404, 'not_found');
    expectError(await service.request('/api/v1/call'), 405, 'method_not_allowed');
    expectError(await service.request('/api/v1/call', { method: 'PUT' }), 405, 'method_not_allowed');
    expectError(await service.request('/api/v1/operations', { method: 'POST' }), 405, 'method_not_allowed');
  });
  it('answers 413 payload_too_large for a body over 64 KiB, after the credential check', async () => {
    const huge = JSON.stringify({ operationId: 'listNotifications', variables: { searchTerm: 'x'.repeat(70_000) } });
    expectError(await service.call(readWrite.key, huge), 413, 'payload_too_large');
    expectError(await service.call(null, huge), 401, 'invalid_key');
  });
  it('never answers 500 for bad input, and never leaks internals', async () => {
    for (const body of [
      '{',
      '{"operationId":null}',
      '{"operationId":"listNotifications","variables":{"cursor":"%%%"}}',
      '{"operationId":"listNotifications","variables":{"notificationTypeFilter":"\\u0000"}}',
    ]) {
      const result = await service.call(readWrite.key, body);
      expect(result.status).toBeLessThan(500);
      expect(result.text).not.toMatch(/stack|at .*\.ts|select |postgres/i);
    }
  });
});

describe('rate-limit headers', () => {
  it('carries X-RateLimit-* on every response of the route, counting down per key', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    const first = await service.call(user.key, list);
    const second = await service.call(user.key, { operationId: 'nope' });
    expect(first.headers.get('x-ratelimit-limit')).toBe('1000');
    expect(Number(first.headers.get('x-ratelimit-remaining'))).toBe(999);
    expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(998);
    const reset = Number(first.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 61);
    expect(first.headers.get('retry-after')).toBeNull();
  });
  it('answers with the request id in X-Request-Id', async () => {
    const result = await service.call(reader.key, list, { headers: { 'x-request-id': 'caller-req-123' } });
    expect(result.headers.get('x-request-id')).toBe('caller-req-123');
    const generated = await service.call(reader.key, list);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
