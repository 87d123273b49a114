import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createPrincipalCache,
  localPrincipalVersion,
  redisPrincipalVersion,
  type PrincipalVersion,
} from '../../src/auth/principal-cache.js';
import { AppError } from '../../src/common/errors.js';
import type { Caller } from '../../src/schema/principal.js';
import { startService, usingRealBackends, type TestService } from '../support/harness.js';

/**
 * Kept principals: trusted only while the version is unchanged, on one instance and across two.
 * The module tests use a Redis key of their own, so other test files' revocations (which replace
 * the shared version) cannot turn their hits into lookups.
 */

const silent = pino({ level: 'silent' });
const redisUrl = process.env.REDIS_URL;
const clients: Redis[] = [];
afterAll(() => clients.forEach((client) => client.disconnect()));

function redisClient(url = redisUrl!) {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true, connectTimeout: 500 });
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** A version of its own: in Redis when the suite has one, else in process. */
async function ownVersion(): Promise<PrincipalVersion> {
  if (!redisUrl) return localPrincipalVersion();
  const client = redisClient();
  await client.connect();
  const key = `test:principals:${randomUUID()}`;
  await client.set(key, randomUUID(), 'EX', 600);
  return redisPrincipalVersion(client, silent, key);
}

const principal = (keyId: string): Caller => ({ type: 'organization', keyId, keyHint: 'stk_test…', organizationId: randomUUID() });

/** A lookup answering `answer` and counting its calls. */
function counted(answer: () => Caller | null | Promise<Caller | null>) {
  const lookup = async () => {
    lookup.calls++;
    return answer();
  };
  lookup.calls = 0;
  return lookup;
}

describe('the principal cache', () => {
  it('keeps a principal once a version has been read, and looks it up again once the version is replaced', async () => {
    const version = await ownVersion();
    const cache = createPrincipalCache({ version, maxEntries: 10, maxAgeMs: 60_000 });
    const lookup = counted(() => principal('k1'));
    for (let i = 0; i < 5; i++) expect(await cache.principalOf('h1', lookup)).toMatchObject({ keyId: 'k1' });
    expect(lookup.calls).toBe(1);
    await cache.changing(async () => undefined);
    expect(await cache.principalOf('h1', lookup)).toMatchObject({ keyId: 'k1' });
    expect(lookup.calls).toBe(2);
  });

  it('never trusts a principal whose lookup overlapped a change: the stamp is a version read before it', async () => {
    const version = await ownVersion();
    const cache = createPrincipalCache({ version, maxEntries: 10, maxAgeMs: 60_000 });
    await cache.principalOf(
      'warm',
      counted(() => principal('w')),
    );
    // Not kept yet: the change commits (and the version is replaced) while the lookup is under way.
    const racing = counted(async () => {
      await version.replace();
      return principal('before the change');
    });
    await cache.principalOf('h2', racing);
    const after = counted(() => null);
    expect(await cache.principalOf('h2', after)).toBeNull();
    expect(after.calls).toBe(1);

    // Kept, then found stale, then looked up while another change lands: not trusted either.
    const kept = counted(() => principal('k2'));
    await cache.principalOf('h3', kept);
    await cache.principalOf('h3', kept);
    await version.replace();
    await cache.principalOf(
      'h3',
      counted(async () => {
        await version.replace();
        return principal('k2');
      }),
    );
    const revoked = counted(() => null);
    expect(await cache.principalOf('h3', revoked)).toBeNull();
    expect(revoked.calls).toBe(1);
  });

  it('keeps its principals through a refused change (nothing written), not through a change that failed otherwise', async () => {
    const version = await ownVersion();
    const cache = createPrincipalCache({ version, maxEntries: 10, maxAgeMs: 60_000 });
    const lookup = counted(() => principal('k'));
    await cache.principalOf('h', lookup);
    await expect(cache.changing(() => Promise.reject(new AppError('not_found', 'No such API key.')))).rejects.toThrow('No such API key.');
    await cache.principalOf('h', lookup);
    expect(lookup.calls).toBe(1);
    // A dropped connection may come after the commit: nothing kept is trusted any more.
    await expect(cache.changing(() => Promise.reject(new Error('Connection terminated')))).rejects.toThrow('Connection terminated');
    await cache.principalOf('h', lookup);
    expect(lookup.calls).toBe(2);
  });

  it('looks up again after the maximum age, and keeps at most its maximum of entries', async () => {
    const version = await ownVersion();
    const aging = createPrincipalCache({ version, maxEntries: 10, maxAgeMs: 50 });
    const lookup = counted(() => principal('k'));
    await aging.principalOf('h', lookup);
    await aging.principalOf('h', lookup);
    expect(lookup.calls).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await aging.principalOf('h', lookup);
    expect(lookup.calls).toBe(2);

    const small = createPrincipalCache({ version, maxEntries: 1, maxAgeMs: 60_000 });
    for (let round = 0; round < 3; round++) {
      for (const id of ['a', 'b'])
        expect(
          await small.principalOf(
            id,
            counted(() => principal(id)),
          ),
        ).toMatchObject({ keyId: id });
    }
  });

  it('keeps nothing without a version (PostgreSQL without Redis) or when it cannot be read', async () => {
    const none = createPrincipalCache({ version: null, maxEntries: 10, maxAgeMs: 60_000 });
    const lookup = counted(() => principal('k'));
    for (let i = 0; i < 3; i++) await none.principalOf('h', lookup);
    expect(lookup.calls).toBe(3);

    // A Redis nobody answers on: every read fails fast, so every request looks its key up.
    const closed = redisClient('redis://127.0.0.1:1');
    await closed.connect().catch(() => undefined);
    const unreachable = createPrincipalCache({ version: redisPrincipalVersion(closed, silent), maxEntries: 10, maxAgeMs: 60_000 });
    const looked = counted(() => principal('k'));
    for (let i = 0; i < 3; i++) expect(await unreachable.principalOf('h', looked)).toMatchObject({ keyId: 'k' });
    expect(looked.calls).toBe(3);
  });

  it.runIf(redisUrl)('trusts nothing kept once the version is gone from Redis (flushed or restarted), then sets a new one', async () => {
    const client = redisClient();
    await client.connect();
    const key = `test:principals:${randomUUID()}`;
    const cache = createPrincipalCache({ version: redisPrincipalVersion(client, silent, key), maxEntries: 10, maxAgeMs: 60_000 });
    const lookup = counted(() => principal('k'));
    // The first read finds no version and sets one: the lookup after it is the first kept.
    for (let i = 0; i < 4; i++) await cache.principalOf('h', lookup);
    expect(lookup.calls).toBe(2);
    const before = await client.get(key);
    await client.del(key);
    await cache.principalOf('h', lookup);
    expect(lookup.calls).toBe(3);
    const renewed = await client.get(key);
    expect(renewed).not.toBeNull();
    expect(renewed).not.toBe(before);
  });
});

describe.runIf(usingRealBackends && redisUrl)('kept principals across two instances sharing PostgreSQL and Redis', () => {
  let a: TestService;
  let b: TestService;
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const list = { operationId: 'listNotifications', variables: {} };
  const orgQuery = `query($id: ID!) { organization(id: $id) { id } }`;

  it('refuses a key revoked, or a role lowered, through one instance on the other at its next request', async () => {
    a = await startService();
    b = await startService();
    const user = await a.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const other = await a.provision();
    for (let i = 0; i < 3; i++) {
      expect((await b.call(other.key, list)).status).toBe(200);
      expect((await b.graphql(orgQuery, { id: user.organizationId }, user.key)).body.data.organization.id).toBe(user.organizationId);
    }
    await a.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: other.keyId });
    expect((await b.call(other.key, list)).status).toBe(401);

    await a.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: MEMBER) { role } }`, { u: user.userId });
    expect((await b.graphql(orgQuery, { id: user.organizationId }, user.key)).body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await b.call(user.key, list)).status).toBe(200);
  });

  it('sees a key revoked by hand in SQL (no version replaced) after PRINCIPAL_CACHE_MAX_AGE_MS at the latest', async () => {
    const aging = await startService({ PRINCIPAL_CACHE_MAX_AGE_MS: '300' });
    try {
      const user = await aging.provision();
      for (let i = 0; i < 3; i++) expect((await aging.call(user.key, list)).status).toBe(200);
      await aging.sql('update api_keys set revoked_at = now() where id = ?', [user.keyId]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await aging.call(user.key, list)).status).toBe(401);
    } finally {
      await aging.close();
    }
  });
});

describe.runIf(usingRealBackends)('PostgreSQL without Redis', () => {
  it('keeps no principal: a key revoked by hand in SQL is refused at its next request', async () => {
    const service = await startService({ REDIS_URL: '' });
    try {
      const user = await service.provision();
      for (let i = 0; i < 3; i++) expect((await service.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(200);
      await service.sql('update api_keys set revoked_at = now() where id = ?', [user.keyId]);
      expect((await service.call(user.key, { operationId: 'getNotificationCounts' })).status).toBe(401);
    } finally {
      await service.close();
    }
  });
});
