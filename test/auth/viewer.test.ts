/**
 * `viewer`: any credential learns who it is (principal, organization and user ids, the key's id,
 * hint and scopes) on /graphql, and a gateway key through the gateway operation `viewer` (scope
 * READ). No answer ever carries a secret.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Provisioned, type TestService } from '../support/harness.js';

const VIEWER = '{ viewer { principal organizationId userId keyId keyHint scopes } }';
const hintOf = (secret: string) => `${secret.slice(0, 8)}…${secret.slice(-4)}`;

let service: TestService;
let admin: Provisioned;
let skipTraceKey: { id: string; secret: string };

beforeAll(async () => {
  service = await startService();
  admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
  const issued = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { id secret } }`, {
    o: admin.organizationId,
  });
  skipTraceKey = issued.body.data.generateSkipTraceKey;
});
afterAll(() => service?.close());

/** The viewer over /graphql; also checks that the raw response text holds no secret. */
async function viewerOnGraphql(bearer: string) {
  const result = await service.graphql(VIEWER, {}, bearer);
  expect(result.status).toBe(200);
  const text = JSON.stringify(result.body);
  for (const secret of [admin.key, skipTraceKey.secret, service.platformToken, bearer]) expect(text).not.toContain(secret);
  return result.body.data.viewer;
}

describe('viewer on /graphql', () => {
  it('names a gateway key’s user, organization, key and current scopes', async () => {
    expect(await viewerOnGraphql(admin.key)).toEqual({
      principal: 'user',
      organizationId: admin.organizationId,
      userId: admin.userId,
      keyId: admin.keyId,
      keyHint: hintOf(admin.key),
      scopes: ['ADMIN', 'READ', 'WRITE'],
    });
  });

  it('answers a key with any scope, WRITE-only included', async () => {
    const writer = await service.provision({ scopes: ['WRITE'] });
    expect(await viewerOnGraphql(writer.key)).toMatchObject({ principal: 'user', userId: writer.userId, scopes: ['WRITE'] });
  });

  it('drops ADMIN from the scopes once the owner is no longer an ADMIN', async () => {
    const lowered = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    expect((await viewerOnGraphql(lowered.key)).scopes).toEqual(['ADMIN', 'READ']);
    const demoted = await service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: MEMBER) { role } }`, { u: lowered.userId });
    expect(demoted.body.data.setUserRole.role).toBe('MEMBER');
    expect((await viewerOnGraphql(lowered.key)).scopes).toEqual(['READ']);
  });

  it('names a skip trace key’s organization and key, with no user and no scopes', async () => {
    expect(await viewerOnGraphql(skipTraceKey.secret)).toEqual({
      principal: 'organization',
      organizationId: admin.organizationId,
      userId: null,
      keyId: skipTraceKey.id,
      keyHint: hintOf(skipTraceKey.secret),
      scopes: [],
    });
  });

  it('shows the platform token as the platform, with no id and no part of the token', async () => {
    expect(await viewerOnGraphql(service.platformToken)).toEqual({
      principal: 'platform',
      organizationId: null,
      userId: null,
      keyId: null,
      keyHint: null,
      scopes: [],
    });
  });

  it('refuses a missing, unknown or revoked credential with UNAUTHENTICATED', async () => {
    const revoked = await service.provision({ scopes: ['READ'] });
    const revoke = await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: revoked.keyId });
    expect(revoke.body.data.revokeApiKey).toBe(true);
    for (const bearer of [`gk_${'Z'.repeat(40)}`, revoked.key]) {
      const result = await service.graphql(VIEWER, {}, bearer);
      expect(result.status).toBe(401);
      expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    const anonymous = await service.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: VIEWER }),
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });
});

describe('the gateway operation viewer', () => {
  it('answers a READ key with its ids, hint and scopes, and no secret', async () => {
    const reader = await service.provision({ scopes: ['READ'] });
    const result = await service.call(reader.key, { operationId: 'viewer' });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: {
        principal: 'user',
        organizationId: reader.organizationId,
        userId: reader.userId,
        keyId: reader.keyId,
        keyHint: hintOf(reader.key),
        scopes: ['READ'],
      },
    });
    expect(result.text).not.toContain(reader.key);
  });

  it('needs the READ scope, like every other read of the gateway', async () => {
    const writer = await service.provision({ scopes: ['WRITE'] });
    const result = await service.call(writer.key, { operationId: 'viewer', variables: {} });
    expect({ status: result.status, code: result.body.error.code }).toEqual({ status: 403, code: 'insufficient_scope' });
    // The error body names its request, as X-Request-Id does (README, Using the gateway).
    expect(result.body.error.requestId).toBe(result.headers.get('x-request-id'));
    expect(result.body.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('takes no variables', async () => {
    const result = await service.call(admin.key, { operationId: 'viewer', variables: { userId: admin.userId } });
    expect(result.status).toBe(422);
    expect(result.body.error.details).toEqual([expect.objectContaining({ path: 'variables.userId' })]);
  });

  it('is listed by discovery with scope READ and a result schema of its six fields', async () => {
    const op = (await service.request('/api/v1/operations/viewer')).body;
    expect(op).toMatchObject({ operationId: 'viewer', scope: 'READ', type: 'query' });
    expect(Object.keys(op.result.properties).sort()).toEqual(['keyHint', 'keyId', 'organizationId', 'principal', 'scopes', 'userId']);
  });
});
