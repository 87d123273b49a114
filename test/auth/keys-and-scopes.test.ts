import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../src/app/schema.js';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const list = { operationId: 'listNotifications', variables: {} };

describe('gateway keys', () => {
  it('issues gk_ + 40 base62 characters, stores only its SHA-256, and shows only a hint afterwards', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    expect(user.key).toMatch(/^gk_[0-9A-Za-z]{40}$/);
    const [row] = await service.sql('select key_hash, hint from api_keys where id = ?', [user.keyId]);
    expect(row.key_hash).toBe(createHash('sha256').update(user.key).digest('hex'));
    expect(row.hint).toBe(`${user.key.slice(0, 8)}…${user.key.slice(-4)}`);
    const dump = await service.sql(`select row_to_json(k)::text as json from api_keys k`);
    expect(dump.map((r) => r.json).join('\n')).not.toContain(user.key.slice(3));
  });

  it('issues distinct keys every time', async () => {
    const a = await service.provision();
    const b = await service.provision({ organizationId: a.organizationId });
    expect(a.key).not.toBe(b.key);
  });

  it('refuses ADMIN scope for a MEMBER user and an empty scope list', async () => {
    const member = await service.provision({ role: 'MEMBER' });
    const admin = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [ADMIN]) { id } }`, { u: member.userId });
    expect(admin.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const empty = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: []) { id } }`, { u: member.userId });
    expect(empty.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('answers NOT_FOUND for keys of unknown users and revocation of unknown keys', async () => {
    const r1 = await service.graphql(`mutation { createApiKey(userId: "00000000-0000-4000-8000-000000000000", scopes: [READ]) { id } }`);
    expect(r1.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const r2 = await service.graphql(`mutation { revokeApiKey(id: "not-a-uuid") }`);
    expect(r2.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });
});

describe('keys per user', () => {
  const CREATE = `mutation($u: ID!, $s: [Scope!]!) { createApiKey(userId: $u, scopes: $s) { id } }`;
  const issue = (userId: string, bearer?: string, scopes = ['READ']) => service.graphql(CREATE, { u: userId, s: scopes }, bearer);
  const activeKeys = async (userId: string) =>
    (
      await service.sql<{ count: number }>(`select count(*)::int as count from api_keys where user_id = ? and revoked_at is null`, [userId])
    )[0].count;

  /** A refusal for the limit: BAD_USER_INPUT whose message names it (MAX_KEYS_PER_USER, 25). */
  function expectLimitRefusal(result: { body: any }) {
    expect(result.body.data?.createApiKey ?? null).toBeNull();
    expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(result.body.errors[0].message).toContain('MAX_KEYS_PER_USER');
    expect(result.body.errors[0].message).toContain('25');
  }

  it('refuses the 26th active key with BAD_USER_INPUT naming the limit, from the platform and from the user’s own ADMIN key', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['ADMIN'] });
    for (let i = 1; i < 25; i++) expect((await issue(admin.userId)).body.errors).toBeUndefined();
    expect(await activeKeys(admin.userId)).toBe(25);
    expectLimitRefusal(await issue(admin.userId));
    expectLimitRefusal(await issue(admin.userId, admin.key, ['READ', 'WRITE']));
    expect(await activeKeys(admin.userId)).toBe(25);
    // Another user of the same organization is not limited by this one's keys.
    const colleague = await service.provision({ organizationId: admin.organizationId });
    expect((await issue(colleague.userId)).body.errors).toBeUndefined();
  });

  it('does not count revoked keys: revoking one frees a place', async () => {
    const user = await service.provision();
    const ids = [user.keyId];
    for (let i = 1; i < 25; i++) ids.push((await issue(user.userId)).body.data.createApiKey.id);
    expectLimitRefusal(await issue(user.userId));
    for (const id of ids.slice(0, 3))
      expect((await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id })).body.data.revokeApiKey).toBe(true);
    for (let i = 0; i < 3; i++) expect((await issue(user.userId)).body.errors).toBeUndefined();
    expectLimitRefusal(await issue(user.userId));
    const [{ count }] = await service.sql<{ count: number }>(`select count(*)::int as count from api_keys where user_id = ?`, [
      user.userId,
    ]);
    expect({ total: count, active: await activeKeys(user.userId) }).toEqual({ total: 28, active: 25 });
  });

  it('never lets concurrent issues pass the limit: 40 at once for a user holding 20 end with exactly 25 active', async () => {
    const user = await service.provision();
    for (let i = 1; i < 20; i++) await issue(user.userId);
    expect(await activeKeys(user.userId)).toBe(20);
    const results = await Promise.all(Array.from({ length: 40 }, () => issue(user.userId)));
    const issued = results.filter((result) => result.body.data?.createApiKey);
    const refused = results.filter((result) => !result.body.data?.createApiKey);
    expect(issued).toHaveLength(5);
    for (const result of refused) expectLimitRefusal(result);
    expect(await activeKeys(user.userId)).toBe(25);
  });
});

describe('ADMIN scope and roles', () => {
  const orgQuery = `query($id: ID!) { organization(id: $id) { id name } }`;

  it('lets an ADMIN-scoped key of an ADMIN read its own organization, not another', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const other = await service.provision();
    const own = await service.graphql(orgQuery, { id: admin.organizationId }, admin.key);
    expect(own.body.data.organization.id).toBe(admin.organizationId);
    const foreign = await service.graphql(orgQuery, { id: other.organizationId }, admin.key);
    expect(foreign.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('voids the ADMIN scope at once when the role is lowered, and for good: raised again, the old key stays without ADMIN', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const adminOnly = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [ADMIN]) { id secret } }`, {
      u: admin.userId,
    });
    expect((await service.graphql(orgQuery, { id: admin.organizationId }, admin.key)).body.data.organization).not.toBeNull();
    await service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: MEMBER) { role } }`, { u: admin.userId });
    const lowered = await service.graphql(orgQuery, { id: admin.organizationId }, admin.key);
    expect(lowered.body.errors[0].extensions.code).toBe('FORBIDDEN');
    // READ still works through the gateway.
    expect((await service.call(admin.key, list)).status).toBe(200);
    await service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: ADMIN) { role } }`, { u: admin.userId });
    const raised = await service.graphql(orgQuery, { id: admin.organizationId }, admin.key);
    expect(raised.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await service.call(admin.key, list)).status).toBe(200);
    expect((await service.sql('select scopes from api_keys where id = ?', [admin.keyId]))[0].scopes).toEqual(['READ']);
    // A key whose only scope was ADMIN was revoked with the demotion.
    expect((await service.graphql(`{ __typename }`, {}, adminOnly.body.data.createApiKey.secret)).status).toBe(401);
    // A newly issued key carries ADMIN again.
    const fresh = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ, ADMIN]) { secret } }`, {
      u: admin.userId,
    });
    expect(
      (await service.graphql(orgQuery, { id: admin.organizationId }, fresh.body.data.createApiKey.secret)).body.data.organization.id,
    ).toBe(admin.organizationId);
  });

  it('never leaves ADMIN on a key issued while its user is being lowered (createApiKey racing setUserRole)', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ'] });
    for (let round = 0; round < 10; round++) {
      await service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: ADMIN) { role } }`, { u: admin.userId });
      const [issued] = await Promise.all([
        service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ, ADMIN]) { id } }`, { u: admin.userId }),
        service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: MEMBER) { role } }`, { u: admin.userId }),
      ]);
      expect(issued.body.data?.createApiKey ?? issued.body.errors[0].extensions.code).not.toBe('INTERNAL');
    }
    const withAdmin = await service.sql(`select id from api_keys where user_id = ? and 'ADMIN' = any(scopes)`, [admin.userId]);
    expect(withAdmin).toEqual([]);
  });

  it('lets an ADMIN-scoped key issue keys for its own user only; another member of its organization is FORBIDDEN', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['ADMIN'] });
    const colleague = await service.provision({ organizationId: admin.organizationId });
    const colleagueAdmin = await service.provision({ organizationId: admin.organizationId, role: 'ADMIN', scopes: ['READ'] });
    const stranger = await service.provision();
    for (const target of [colleague, colleagueAdmin, stranger]) {
      for (const scopes of [['READ'], ['READ', 'WRITE'], ['ADMIN']]) {
        const refused = await service.graphql(
          `mutation($u: ID!, $s: [Scope!]!) { createApiKey(userId: $u, scopes: $s) { id } }`,
          { u: target.userId, s: scopes },
          admin.key,
        );
        expect({ target: target.userId, scopes, code: refused.body.errors?.[0].extensions.code }).toEqual({
          target: target.userId,
          scopes,
          code: 'FORBIDDEN',
        });
      }
      const keys = await service.sql('select id from api_keys where user_id = ?', [target.userId]);
      expect(keys.map((k) => k.id)).toEqual([target.keyId]);
    }
    const own = await service.graphql(
      `mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ, WRITE]) { id secret createdBy } }`,
      { u: admin.userId.toUpperCase() },
      admin.key,
    );
    expect(own.body.data.createApiKey.createdBy).toBe(admin.keyId);
    expect((await service.sql('select created_by from api_keys where id = ?', [own.body.data.createApiKey.id]))[0].created_by).toBe(
      admin.keyId,
    );
    expect((await service.call(own.body.data.createApiKey.secret, list)).status).toBe(200);
    // A READ/WRITE key may not issue keys, not even for its own user.
    const unscoped = await service.graphql(
      `mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { id } }`,
      { u: colleague.userId },
      colleague.key,
    );
    expect(unscoped.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('records platform as the issuer of keys issued with the platform token', async () => {
    const user = await service.provision();
    expect((await service.sql('select created_by from api_keys where id = ?', [user.keyId]))[0].created_by).toBe('platform');
    const issued = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { createdBy } }`, {
      u: user.userId,
    });
    expect(issued.body.data.createApiKey.createdBy).toBe('platform');
  });

  it('lets an organization admin revoke any gateway key of its own organization, not of another', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['ADMIN'] });
    const colleague = await service.provision({ organizationId: admin.organizationId });
    const stranger = await service.provision();
    const revokeForeign = await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: stranger.keyId }, admin.key);
    expect(revokeForeign.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await service.call(stranger.key, list)).status).toBe(200);
    const revokeOwn = await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: colleague.keyId }, admin.key);
    expect(revokeOwn.body.data.revokeApiKey).toBe(true);
    expect((await service.call(colleague.key, list)).status).toBe(401);
  });
});

describe('platform principal', () => {
  it('is refused every platform field without the token, with FORBIDDEN for user keys', async () => {
    const user = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    for (const query of [
      `mutation { createOrganization(name: "x") { id } }`,
      `mutation($u: ID!) { setUserRole(userId: $u, role: ADMIN) { id } }`,
      `mutation($u: ID!) { publishNotifications(input: [{ userId: $u, notificationType: "deal_created", title: "t", body: "b" }]) { id } }`,
    ]) {
      const result = await service.graphql(query, { u: user.userId }, user.key);
      expect(result.body.errors[0].extensions.code).toBe('FORBIDDEN');
    }
  });

  it('is refused with a wrong token of the right length (UNAUTHENTICATED)', async () => {
    const wrong = service.platformToken.slice(0, -1) + (service.platformToken.endsWith('a') ? 'b' : 'a');
    const result = await service.graphql(`{ __typename }`, {}, wrong);
    expect(result.status).toBe(401);
    expect(result.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('provisions organizations and users with validation', async () => {
    const org = await service.graphql(`mutation { createOrganization(name: "Acme") { id name skipTraceEnabled skipTraceCredits } }`);
    expect(org.body.data.createOrganization).toMatchObject({ name: 'Acme', skipTraceEnabled: true, skipTraceCredits: 0 });
    const id = org.body.data.createOrganization.id;
    const user = await service.graphql(
      `mutation($o: ID!) { createUser(organizationId: $o, email: "A@Example.com", name: "A") { organizationId email name role } }`,
      { o: id },
    );
    expect(user.body.data.createUser).toEqual({ organizationId: id, email: 'a@example.com', name: 'A', role: 'MEMBER' });
    const dup = await service.graphql(`mutation($o: ID!) { createUser(organizationId: $o, email: "a@example.com") { id } }`, { o: id });
    expect(dup.body.errors[0].extensions.code).toBe('CONFLICT');
    const badEmail = await service.graphql(`mutation($o: ID!) { createUser(organizationId: $o, email: "nope") { id } }`, { o: id });
    expect(badEmail.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const noOrg = await service.graphql(
      `mutation { createUser(organizationId: "00000000-0000-4000-8000-000000000000", email: "x@y.z") { id } }`,
    );
    expect(noOrg.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const missing = await service.graphql(`query { organization(id: "00000000-0000-4000-8000-000000000000") { id } }`);
    expect(missing.body.data.organization).toBeNull();
  });
});

describe('scope declarations', () => {
  it('every root field declares its auth scopes', () => {
    const undeclared: string[] = [];
    for (const root of [schema.getQueryType(), schema.getMutationType()]) {
      for (const field of Object.values(root?.getFields() ?? {})) {
        const options = field.extensions?.pothosOptions as { authScopes?: unknown } | undefined;
        if (!options?.authScopes) undeclared.push(`${root?.name}.${field.name}`);
      }
    }
    expect(undeclared).toEqual([]);
  });
});
