/**
 * The gateway's credential stage (src/http/credential-guard.ts) looks the key up concurrently with
 * the key's rate window, before the body is read: the contract's order of refusals must hold, a
 * revoked key must fail on the very next request, and made-up keys must grow nothing.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { publish, startService, usingRealBackends, type Provisioned, type TestService } from '../support/harness.js';

const WINDOW = 5;
/** The background workers' and sweepers' statements would mix into the round trips counted below. */
const QUIET_BACKGROUND = Object.fromEntries(
  ['WEBHOOK_POLL_INTERVAL_MS', 'SKIPTRACE_JOB_POLL_MS', 'NOTIFICATION_SWEEP_INTERVAL_MS', 'SKIPTRACE_IDEMPOTENCY_SWEEP_INTERVAL_MS'].map(
    (name) => [name, '600000'],
  ),
);
let service: TestService;
/** The same service with a window no test reaches (embedded mode boots an engine per service: two for the file). */
let wide: TestService;
beforeAll(async () => {
  // Client IPs from X-Forwarded-For, so each case has an IP window of its own.
  [service, wide] = await Promise.all([
    startService({
      GATEWAY_RATE_LIMIT_PER_MIN: String(WINDOW),
      AUTH_FAILURE_LIMIT_PER_MIN: '50',
      TRUST_PROXY: 'true',
      ...QUIET_BACKGROUND,
    }),
    startService({ GATEWAY_RATE_LIMIT_PER_MIN: '100000', TRUST_PROXY: 'true' }),
  ]);
}, 120_000);
afterAll(() => Promise.all([service?.close(), wide?.close()]));

const ip = () => `10.${randomInt(255)}.${randomInt(255)}.${randomInt(255)}`;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const madeUpKey = () => `gk_${Array.from(randomBytes(40), (b) => BASE62[b % 62]).join('')}`;
const revoke = (key: Provisioned) => service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: key.keyId });
/** The Redis key of a gateway key's window (`http/credential-guard.ts`), by the presented key. */
const windowKey = (key: string) => `rl:gateway:gateway:${hashSecret(key).slice(0, 32)}`;

const BODIES = {
  'bad JSON': '{"operationId": ',
  'unknown operationId': { operationId: 'nope', variables: {} },
  'bad variables': { operationId: 'listNotifications', variables: { limit: 0 } },
  'valid list': { operationId: 'listNotifications', variables: {} },
  'valid counts': { operationId: 'getNotificationCounts', variables: {} },
} as const;

describe('the order of refusals', () => {
  type Case = 'unknown key' | 'revoked key' | 'key without READ' | 'key over its window' | 'READ key';
  const expected: Record<Case, Record<keyof typeof BODIES, [number, string | null]>> = {
    'unknown key': {
      'bad JSON': [401, 'invalid_key'],
      'unknown operationId': [401, 'invalid_key'],
      'bad variables': [401, 'invalid_key'],
      'valid list': [401, 'invalid_key'],
      'valid counts': [401, 'invalid_key'],
    },
    'revoked key': {
      'bad JSON': [401, 'invalid_key'],
      'unknown operationId': [401, 'invalid_key'],
      'bad variables': [401, 'invalid_key'],
      'valid list': [401, 'invalid_key'],
      'valid counts': [401, 'invalid_key'],
    },
    'key without READ': {
      'bad JSON': [422, 'invalid_request'],
      'unknown operationId': [404, 'unknown_operation'],
      'bad variables': [403, 'insufficient_scope'],
      'valid list': [403, 'insufficient_scope'],
      'valid counts': [403, 'insufficient_scope'],
    },
    'key over its window': {
      'bad JSON': [429, 'rate_limited'],
      'unknown operationId': [429, 'rate_limited'],
      'bad variables': [429, 'rate_limited'],
      'valid list': [429, 'rate_limited'],
      'valid counts': [429, 'rate_limited'],
    },
    'READ key': {
      'bad JSON': [422, 'invalid_request'],
      'unknown operationId': [404, 'unknown_operation'],
      'bad variables': [422, 'invalid_request'],
      'valid list': [200, null],
      'valid counts': [200, null],
    },
  };

  for (const [name, bodies] of Object.entries(expected) as [Case, (typeof expected)[Case]][]) {
    it(`${name}: ${Object.entries(bodies)
      .map(([body, [status]]) => `${body} ${status}`)
      .join(', ')}`, async () => {
      let key: string;
      if (name === 'unknown key') key = madeUpKey();
      else {
        const provisioned = await service.provision({ scopes: name === 'key without READ' ? ['WRITE'] : ['READ'] });
        key = provisioned.key;
        if (name === 'revoked key') {
          expect((await service.call(key, BODIES['valid counts'])).status).toBe(200);
          await revoke(provisioned);
        }
        if (name === 'key over its window')
          for (let i = 0; i < WINDOW; i++) expect((await service.call(key, BODIES['valid counts'])).status).toBe(200);
      }
      // Each case one request at a time (the window's count is part of the expectation), then all at once.
      const headers = { 'x-forwarded-for': ip() };
      for (const [body, [status, code]] of Object.entries(bodies)) {
        const answer = await service.call(key, BODIES[body as keyof typeof BODIES], { headers });
        expect([body, answer.status, answer.body?.error?.code ?? null]).toEqual([body, status, code]);
        expect(answer.headers.get('x-ratelimit-limit'), body).toBe(
          name === 'unknown key' || name === 'revoked key' ? '50' : String(WINDOW),
        );
      }
      if (name !== 'READ key' && name !== 'key without READ') {
        const answers = await Promise.all(
          Object.keys(bodies).map((body) =>
            service.call(key, BODIES[body as keyof typeof BODIES], { headers: { 'x-forwarded-for': ip() } }),
          ),
        );
        expect(answers.map((a) => a.status)).toEqual(Object.values(bodies).map(([status]) => status));
      }
    });
  }

  it('an invalid key is 401 before the body size (413) and the media type (415); a key over its window is 429 before them', async () => {
    const huge = JSON.stringify({ operationId: 'listNotifications', variables: { searchTerm: 'x'.repeat(70_000) } });
    expect((await service.call(madeUpKey(), huge, { headers: { 'x-forwarded-for': ip() } })).status).toBe(401);
    const asText = (key: string) =>
      service.request('/api/v1/call', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain', 'x-forwarded-for': ip() },
        body: '{}',
      });
    expect((await asText(madeUpKey())).status).toBe(401);
    const user = await service.provision({ scopes: ['READ'] });
    expect((await asText(user.key)).status).toBe(415);
    expect((await service.call(user.key, huge)).status).toBe(413);
    for (let i = 0; i < WINDOW - 2; i++) await service.call(user.key, BODIES['valid counts']);
    expect((await service.call(user.key, huge)).status).toBe(429);
    expect((await asText(user.key)).status).toBe(429);
  });
});

describe('windows of keys that are not active', () => {
  it.runIf(usingRealBackends)('spends the client IP window, and leaves no window in Redis, for made-up and revoked keys', async () => {
    const redis = service.app.services.redis!;
    const headers = { 'x-forwarded-for': ip() };
    const madeUp = madeUpKey();
    const revoked = await service.provision({ scopes: ['READ'] });
    expect((await service.call(revoked.key, BODIES['valid counts'])).status).toBe(200);
    expect(await redis.exists(windowKey(revoked.key))).toBe(1);
    await revoke(revoked);

    const remaining: number[] = [];
    for (const key of [madeUp, revoked.key, madeUp, revoked.key])
      for (const body of [BODIES['valid list'], BODIES['valid counts'], BODIES['bad JSON'], BODIES['unknown operationId']]) {
        const answer = await service.call(key, body, { headers });
        expect(answer.status).toBe(401);
        remaining.push(Number(answer.headers.get('x-ratelimit-remaining')));
      }
    // Every request spent a point of the IP's window, one after another.
    expect(remaining).toEqual(Array.from({ length: 16 }, (_, i) => 50 - 1 - i));
    expect(await redis.exists(windowKey(madeUp), windowKey(revoked.key))).toBe(0);
    // And many at once leave none either.
    const keys = Array.from({ length: 30 }, madeUpKey);
    await Promise.all(keys.map((key) => service.call(key, BODIES['valid counts'], { headers: { 'x-forwarded-for': ip() } })));
    expect(await redis.exists(...keys.map(windowKey))).toBe(0);
  });

  it('a key spends its one window on /api/v1/call and /graphql alike', async () => {
    const user = await service.provision({ scopes: ['READ'] });
    for (let i = 0; i < WINDOW - 1; i++) expect((await service.call(user.key, BODIES['valid counts'])).status).toBe(200);
    const viaGraphql = await service.graphql('{ notificationCounts { unreadCount } }', {}, user.key);
    expect(viaGraphql.status).toBe(200);
    expect((await service.call(user.key, BODIES['valid counts'])).status).toBe(429);
  });
});

describe('revocation', () => {
  // A client IP of the file's own: the 401s spend its window, shared in Redis with other files' services.
  const own = { headers: { 'x-forwarded-for': ip() } };
  it('refuses a revoked key on the very next request, for reads and marks', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    const mark = { operationId: 'markAllNotificationsRead', variables: { isSeen: true } };
    expect((await service.call(user.key, BODIES['valid list'], own)).status).toBe(200);
    await revoke(user);
    expect((await service.call(user.key, BODIES['valid list'], own)).status).toBe(401);
    expect((await service.call(user.key, BODIES['valid counts'], own)).status).toBe(401);
    expect((await service.call(user.key, mark, own)).status).toBe(401);
  });

  it('answers every request 200 or 401 while the key is revoked among them, and 401 once the revocation is done', async () => {
    const user = await wide.provision({ scopes: ['READ'] });
    await publish(wide, user.userId, [{ notificationType: 'deal_created', title: 'one', body: 'b' }]);
    const calls = Array.from({ length: 40 }, (_, i) =>
      wide.call(
        user.key,
        i % 2 ? BODIES['valid list'] : { operationId: 'getNotificationCounts', variables: { notificationTypeFilter: 'deal_created' } },
        own,
      ),
    );
    const revoked = wide.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: user.keyId });
    const answers = await Promise.all(calls);
    expect((await revoked).body.data.revokeApiKey).toBe(true);
    for (const answer of answers) {
      expect([200, 401]).toContain(answer.status);
      if (answer.status === 200) expect(answer.body.data.total ?? answer.body.data.unreadCount).toBe(1);
      else expect(answer.body.error.code).toBe('invalid_key');
    }
    expect((await wide.call(user.key, BODIES['valid counts'], own)).status).toBe(401);
  }, 120_000);
});

describe("answers that depend on the key's owner", () => {
  it("an owner without rows has an empty page and zero counts; another owner's cursor is refused", async () => {
    const user = await wide.provision({ scopes: ['READ'] });
    await publish(
      wide,
      user.userId,
      Array.from({ length: 3 }, (_, i) => ({ notificationType: 'deal_created', title: `t${i}`, body: 'b' })),
    );
    const empty = await wide.provision({ scopes: ['READ'] });
    expect((await wide.call(empty.key, BODIES['valid list'])).body.data).toEqual({
      notifications: [],
      total: 0,
      hasUnread: false,
      nextCursor: null,
    });
    expect((await wide.call(empty.key, BODIES['valid counts'])).body.data).toEqual({ unreadCount: 0, readCount: 0, byType: [] });
    const first = await wide.call(user.key, { operationId: 'listNotifications', variables: { limit: 2 } });
    const foreign = await wide.call(empty.key, { operationId: 'listNotifications', variables: { cursor: first.body.data.nextCursor } });
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.details).toEqual([{ path: 'cursor', message: 'is not a cursor of this feed' }]);
  });
});

describe('round trips', () => {
  it("a call is its operation's statements, after the key lookup when its principal is not kept", async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    const [id] = await publish(service, user.userId, [{ notificationType: 'deal_created', title: 'one', body: 'b' }]);
    const db = service.app.services.sql;
    const { rows, run } = db;
    const statements: string[] = [];
    const first = (statement: { text: string }) => statements.push(statement.text.trim().split(/\s+/).slice(0, 3).join(' '));
    db.rows = ((statement) => (first(statement), rows.call(db, statement))) as typeof db.rows;
    db.run = ((statement) => (first(statement), run.call(db, statement))) as typeof db.run;
    const counted = async (body: unknown) => {
      statements.length = 0;
      expect((await service.call(user.key, body)).status).toBe(200);
      return [...statements];
    };
    const LOOKUP = 'select k.id, k.key_hash,';
    // After the first call the principal is kept; another test file's revocation (which replaces the
    // shared version) may send one call's lookup again, never more than one.
    const afterLookup = (statements: string[]) => {
      expect(statements.filter((text) => text === LOOKUP).length).toBeLessThanOrEqual(1);
      return statements.filter((text) => text !== LOOKUP);
    };
    try {
      expect(await counted(BODIES['valid counts'])).toEqual([LOOKUP, 'select notification_type, unread_count,']);
      // The page and its totals are one statement.
      expect(afterLookup(await counted(BODIES['valid list']))).toEqual(['with t as']);
      const mark = await counted({ operationId: 'markNotificationsRead', variables: { notificationIds: [id], isSeen: true } });
      expect(afterLookup(mark).slice(0, 1)).toEqual(['with serialized as']);
      expect(afterLookup(await counted(BODIES['valid counts']))).toEqual(['select notification_type, unread_count,']);
    } finally {
      Object.assign(db, { rows, run });
    }
  });
});
