import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isObjectType } from 'graphql';
import { schema } from '../../src/app/schema.js';
import { startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const ORGANIZATIONS = `query($first: Int, $after: String) { organizations(first: $first, after: $after) { nodes { id name } nextCursor } }`;
const USERS = `query($org: ID!, $first: Int, $after: String) {
  users(organizationId: $org, first: $first, after: $after) { nodes { id organizationId email role } nextCursor }
}`;
const API_KEYS = `query($u: ID!, $first: Int, $after: String) {
  apiKeys(userId: $u, first: $first, after: $after) { nodes { id hint scopes createdAt createdBy revokedAt } nextCursor }
}`;

const codeOf = (result: { body: any }) => result.body.errors?.[0]?.extensions?.code;

async function createOrganization(name = `Listing ${randomUUID()}`): Promise<string> {
  const result = await service.graphql(`mutation($n: String!) { createOrganization(name: $n) { id } }`, { n: name });
  return result.body.data.createOrganization.id;
}

async function createUser(organizationId: string): Promise<string> {
  const result = await service.graphql(`mutation($o: ID!, $e: String!) { createUser(organizationId: $o, email: $e) { id } }`, {
    o: organizationId,
    e: `${randomUUID()}@example.com`,
  });
  return result.body.data.createUser.id;
}

async function skipTraceKey(organizationId: string): Promise<string> {
  const issued = await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: organizationId });
  return issued.body.data.generateSkipTraceKey.secret;
}

/**
 * Walks every page of a listing while `insert` keeps adding rows, and returns the ids in the order
 * they were listed.
 */
async function walkWhileInserting(
  page: (after: string | null) => Promise<{ nodes: { id: string }[]; nextCursor: string | null }>,
  insert: () => Promise<unknown>,
): Promise<{ ids: string[]; pages: number }> {
  let inserting = true;
  const inserter = (async () => {
    while (inserting) await insert();
  })();
  const ids: string[] = [];
  let after: string | null = null;
  let pages = 0;
  try {
    do {
      const result = await page(after);
      ids.push(...result.nodes.map((node) => node.id));
      after = result.nextCursor;
      pages++;
      // Let the inserter land rows between pages.
      await insert();
    } while (after !== null);
  } finally {
    inserting = false;
    await inserter;
  }
  return { ids, pages };
}

/** Every row that existed at the first call appears once, in the snapshot's order (created_at desc, id desc). */
function expectEveryRowOnce(listed: string[], snapshot: string[]) {
  expect(new Set(listed).size).toBe(listed.length);
  const existing = new Set(snapshot);
  expect(listed.filter((id) => existing.has(id))).toEqual(snapshot);
}

describe('organizations', () => {
  it('pages through every organization once, newest first, while organizations are being created', async () => {
    // Rows sharing one created_at, so a page boundary falls inside a tie and only the id orders them.
    const tie = new Date(Date.now() - 60_000);
    for (let i = 0; i < 30; i++)
      await service.sql(`insert into organizations (id, name, created_at) values (?, ?, ?)`, [randomUUID(), `Tie ${i}`, tie]);
    for (let i = 0; i < 5; i++) await createOrganization();
    const snapshot = (await service.sql<{ id: string }>(`select id from organizations order by created_at desc, id desc`)).map(
      (row) => row.id,
    );

    const { ids, pages } = await walkWhileInserting(
      async (after) => {
        const result = await service.graphql(ORGANIZATIONS, { first: 7, after });
        expect(result.body.errors).toBeUndefined();
        expect(result.body.data.organizations.nodes.length).toBeLessThanOrEqual(7);
        return result.body.data.organizations;
      },
      () => createOrganization(),
    );
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(snapshot.length / 7));
    expectEveryRowOnce(ids, snapshot);

    // Listed in (created_at desc, id desc) order, new rows included.
    const order = await service.sql<{ id: string }>(
      `select id from organizations where id = any(?::uuid[]) order by created_at desc, id desc`,
      [`{${ids.join(',')}}`],
    );
    expect(ids).toEqual(order.map((row) => row.id));
  });

  it('starts with the newest organization and holds 50 by default', async () => {
    const newest = await createOrganization();
    const first = await service.graphql(ORGANIZATIONS, { first: 1 });
    const [top] = first.body.data.organizations.nodes;
    expect(first.body.data.organizations.nextCursor).toEqual(expect.any(String));
    // Other test files may create organizations meanwhile: the top one is this or a newer one.
    const [order] = await service.sql<{ newer: boolean }>(
      `select (t.created_at, t.id) >= (n.created_at, n.id) as newer from organizations t, organizations n where t.id = ? and n.id = ?`,
      [top.id, newest],
    );
    expect(order.newer).toBe(true);
    const byDefault = await service.graphql(`{ organizations { nodes { id } } }`);
    const [{ count }] = await service.sql<{ count: number }>(`select count(*)::int as count from organizations`);
    expect(byDefault.body.data.organizations.nodes.length).toBe(Math.min(50, count));
  });

  it('is refused to every caller but the platform', async () => {
    const member = await service.provision({ role: 'MEMBER', scopes: ['READ', 'WRITE'] });
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    for (const key of [member.key, admin.key, await skipTraceKey(admin.organizationId)])
      expect(codeOf(await service.graphql(ORGANIZATIONS, {}, key))).toBe('FORBIDDEN');
    const anonymous = await service.graphql(ORGANIZATIONS, {}, 'gk_0000000000000000000000000000000000000000');
    expect(anonymous.status).toBe(401);
    expect(codeOf(anonymous)).toBe('UNAUTHENTICATED');
  });
});

describe('users', () => {
  it("pages through every user of the organization once, newest first, while users are being added; no other organization's user", async () => {
    const organizationId = await createOrganization();
    const otherOrganization = await createOrganization();
    await createUser(otherOrganization);
    const tie = new Date(Date.now() - 60_000);
    for (let i = 0; i < 20; i++)
      await service.sql(`insert into users (id, organization_id, email, created_at) values (?, ?, ?, ?)`, [
        randomUUID(),
        organizationId,
        `tie-${i}@example.com`,
        tie,
      ]);
    for (let i = 0; i < 5; i++) await createUser(organizationId);
    const snapshot = (
      await service.sql<{ id: string }>(`select id from users where organization_id = ? order by created_at desc, id desc`, [
        organizationId,
      ])
    ).map((row) => row.id);

    const { ids, pages } = await walkWhileInserting(
      async (after) => {
        const result = await service.graphql(USERS, { org: organizationId, first: 4, after });
        expect(result.body.errors).toBeUndefined();
        for (const node of result.body.data.users.nodes) expect(node.organizationId).toBe(organizationId);
        return result.body.data.users;
      },
      () => createUser(organizationId),
    );
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(snapshot.length / 4));
    expectEveryRowOnce(ids, snapshot);
    const all = await service.sql<{ id: string }>(`select id from users where organization_id = ? order by created_at desc, id desc`, [
      organizationId,
    ]);
    // Nothing listed that is not this organization's, and rows added meanwhile (newest first) only ahead of the walk.
    expect(all.map((row) => row.id)).toEqual(expect.arrayContaining(ids));
  });

  it('lets the platform and an ADMIN of that organization list it, and refuses a MEMBER key, another ADMIN and a skip trace key', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const member = await service.provision({ organizationId: admin.organizationId, role: 'MEMBER', scopes: ['READ', 'WRITE'] });
    const otherAdmin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const expected = [member.userId, admin.userId];

    const byPlatform = await service.graphql(USERS, { org: admin.organizationId });
    expect(byPlatform.body.data.users.nodes.map((node: { id: string }) => node.id)).toEqual(expected);
    expect(byPlatform.body.data.users.nextCursor).toBeNull();
    // The id's case does not matter to the scope.
    const byAdmin = await service.graphql(USERS, { org: admin.organizationId.toUpperCase() }, admin.key);
    expect(byAdmin.body.data.users.nodes.map((node: { id: string }) => node.id)).toEqual(expected);

    for (const key of [member.key, otherAdmin.key, await skipTraceKey(admin.organizationId)])
      expect(codeOf(await service.graphql(USERS, { org: admin.organizationId }, key))).toBe('FORBIDDEN');
    expect(codeOf(await service.graphql(USERS, { org: 'not-a-uuid' }, otherAdmin.key))).toBe('FORBIDDEN');

    // An ADMIN whose role was lowered holds ADMIN no more.
    await service.graphql(`mutation($u: ID!) { setUserRole(userId: $u, role: MEMBER) { id } }`, { u: admin.userId });
    expect(codeOf(await service.graphql(USERS, { org: admin.organizationId }, admin.key))).toBe('FORBIDDEN');
  });

  it('answers NOT_FOUND for an unknown organization', async () => {
    expect(codeOf(await service.graphql(USERS, { org: randomUUID() }))).toBe('NOT_FOUND');
    expect(codeOf(await service.graphql(USERS, { org: 'not-a-uuid' }))).toBe('NOT_FOUND');
  });
});

describe('page arguments', () => {
  it('refuses first outside 1..200 with BAD_USER_INPUT naming first', async () => {
    const organizationId = await createOrganization();
    const userId = await createUser(organizationId);
    for (const first of [0, -1, 201]) {
      for (const result of [
        await service.graphql(ORGANIZATIONS, { first }),
        await service.graphql(USERS, { org: organizationId, first }),
        await service.graphql(API_KEYS, { u: userId, first }),
      ]) {
        expect(codeOf(result)).toBe('BAD_USER_INPUT');
        expect(result.body.errors[0].extensions.details).toEqual([{ path: 'first', message: 'must be between 1 and 200' }]);
      }
    }
    expect(codeOf(await service.graphql(ORGANIZATIONS, { first: 200 }))).toBeUndefined();
    expect(codeOf(await service.graphql(API_KEYS, { u: userId, first: 200 }))).toBeUndefined();
    expect(codeOf(await service.graphql(API_KEYS, { u: userId, first: 1 }))).toBeUndefined();
  });

  it("refuses a malformed cursor and another listing's cursor with BAD_USER_INPUT", async () => {
    const a = await createOrganization();
    const b = await createOrganization();
    for (const org of [a, b]) for (let i = 0; i < 2; i++) await createUser(org);
    const orgCursor = (await service.graphql(ORGANIZATIONS, { first: 1 })).body.data.organizations.nextCursor;
    const usersOfA = (await service.graphql(USERS, { org: a, first: 1 })).body.data.users.nextCursor;
    expect(orgCursor).toEqual(expect.any(String));
    expect(usersOfA).toEqual(expect.any(String));

    // A cursor of the feed, another organization's users, the organizations listing, and garbage.
    const feedUser = await service.provision({ scopes: ['READ'] });
    await service.graphql(`mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }`, {
      input: [1, 2].map((i) => ({ userId: feedUser.userId, notificationType: 'task_assigned', title: `t${i}`, body: 'b' })),
    });
    const feed = await service.graphql(`{ notifications(limit: 1) { nextCursor } }`, {}, feedUser.key);
    const feedCursor = feed.body.data?.notifications?.nextCursor;
    // Key listings of two users, each with two keys.
    const otherUser = await service.provision({ organizationId: feedUser.organizationId });
    for (const user of [feedUser, otherUser])
      await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { id } }`, { u: user.userId });
    const keysOf = async (userId: string) => (await service.graphql(API_KEYS, { u: userId, first: 1 })).body.data.apiKeys.nextCursor;
    const keysCursor = await keysOf(feedUser.userId);
    const otherKeysCursor = await keysOf(otherUser.userId);
    expect(keysCursor).toEqual(expect.any(String));

    const garbage = ['x', 'bm90IGpzb24', Buffer.from(JSON.stringify([1, 'nope', 'tag'])).toString('base64url')];
    const refused = [
      ...[...garbage, usersOfA, feedCursor].filter(Boolean).map((after) => service.graphql(ORGANIZATIONS, { after })),
      ...[...garbage, orgCursor, feedCursor].filter(Boolean).map((after) => service.graphql(USERS, { org: a, after })),
      service.graphql(USERS, { org: b, after: usersOfA }),
      ...[keysCursor, otherKeysCursor].map((after) => service.graphql(ORGANIZATIONS, { after })),
      service.graphql(USERS, { org: a, after: keysCursor }),
      ...[...garbage, orgCursor, usersOfA, feedCursor, otherKeysCursor]
        .filter(Boolean)
        .map((after) => service.graphql(API_KEYS, { u: feedUser.userId, after })),
    ];
    for (const result of await Promise.all(refused)) {
      expect(codeOf(result)).toBe('BAD_USER_INPUT');
      expect(result.body.errors[0].extensions.details[0].path).toBe('after');
    }
    // Its own listing accepts it.
    expect(codeOf(await service.graphql(USERS, { org: a, after: usersOfA }))).toBeUndefined();
    expect(codeOf(await service.graphql(ORGANIZATIONS, { after: orgCursor }))).toBeUndefined();
    const rest = await service.graphql(API_KEYS, { u: feedUser.userId, after: keysCursor });
    expect(rest.body.data.apiKeys.nodes).toHaveLength(1);
  });
});

describe('apiKeys', () => {
  let owner: Provisioned;
  let issued: { id: string; secret: string }[];

  beforeAll(async () => {
    owner = await service.provision({ role: 'ADMIN', scopes: ['READ'] });
    issued = [];
    for (const scopes of [['READ'], ['WRITE'], ['READ', 'ADMIN']]) {
      const result = await service.graphql(`mutation($u: ID!, $s: [Scope!]!) { createApiKey(userId: $u, scopes: $s) { id secret } }`, {
        u: owner.userId,
        s: scopes,
      });
      issued.push(result.body.data.createApiKey);
    }
    await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: issued[1].id });
  });

  it("lists a user's keys newest first, revoked ones included, with hints and never a secret", async () => {
    const result = await service.graphql(API_KEYS, { u: owner.userId });
    const keys = result.body.data.apiKeys.nodes;
    const rows = await service.sql<{ id: string }>(`select id from api_keys where user_id = ? order by created_at desc, id desc`, [
      owner.userId,
    ]);
    expect(keys.map((key: { id: string }) => key.id)).toEqual(rows.map((row) => row.id));
    expect(keys.map((key: { id: string }) => key.id)).toEqual([...issued.map((key) => key.id).reverse(), owner.keyId]);
    expect(keys[1]).toMatchObject({ id: issued[1].id, scopes: ['WRITE'], createdBy: 'platform', revokedAt: expect.any(String) });
    expect(keys[0]).toMatchObject({ scopes: ['ADMIN', 'READ'], revokedAt: null });
    expect(keys[0].hint).toBe(`${issued[2].secret.slice(0, 8)}…${issued[2].secret.slice(-4)}`);

    const text = JSON.stringify(result.body);
    const hashes = await service.sql<{ key_hash: string }>(`select key_hash from api_keys where user_id = ?`, [owner.userId]);
    for (const secret of [...issued.map((key) => key.secret), owner.key]) expect(text).not.toContain(secret.slice(3));
    for (const { key_hash } of hashes) expect(text).not.toContain(key_hash);
  });

  it('has no secret or hash in its type', async () => {
    const type = schema.getType('ApiKey');
    expect(isObjectType(type)).toBe(true);
    expect(Object.keys(isObjectType(type) ? type.getFields() : {}).sort()).toEqual([
      'createdAt',
      'createdBy',
      'hint',
      'id',
      'revokedAt',
      'scopes',
    ]);
    for (const field of ['secret', 'keyHash']) {
      const result = await service.graphql(`query($u: ID!) { apiKeys(userId: $u) { nodes { id ${field} } } }`, { u: owner.userId });
      expect(result.body.data).toBeUndefined();
      expect(result.body.errors[0].message).toContain(field);
    }
  });

  it("lets the user's own key of any scope and an ADMIN of its organization list them, and refuses others", async () => {
    const member = await service.provision({ organizationId: owner.organizationId, role: 'MEMBER', scopes: ['WRITE'] });
    const admin = await service.provision({ organizationId: owner.organizationId, role: 'ADMIN', scopes: ['ADMIN'] });
    const otherAdmin = await service.provision({ role: 'ADMIN', scopes: ['READ', 'ADMIN'] });
    const count = (await service.graphql(API_KEYS, { u: owner.userId })).body.data.apiKeys.nodes.length;

    for (const key of [owner.key, issued[0].secret, admin.key]) {
      const result = await service.graphql(API_KEYS, { u: owner.userId.toUpperCase() }, key);
      expect(result.body.data?.apiKeys.nodes).toHaveLength(count);
    }
    expect((await service.graphql(API_KEYS, { u: member.userId }, member.key)).body.data.apiKeys.nodes).toHaveLength(1);

    for (const key of [member.key, otherAdmin.key, await skipTraceKey(owner.organizationId)])
      expect(codeOf(await service.graphql(API_KEYS, { u: owner.userId }, key))).toBe('FORBIDDEN');
    expect(codeOf(await service.graphql(API_KEYS, { u: randomUUID() }, otherAdmin.key))).toBe('FORBIDDEN');
    const anonymous = await service.graphql(API_KEYS, { u: owner.userId }, 'not-a-key');
    expect(codeOf(anonymous)).toBe('UNAUTHENTICATED');
  });

  it("pages through a user's keys once, newest first, while keys are issued and revoked; 50 by default", async () => {
    const user = await service.provision();
    // Revoked keys sharing one created_at (they don't count against the user's active keys), so a
    // page boundary falls inside a tie and only the id orders them.
    const tie = new Date(Date.now() - 60_000);
    for (let i = 0; i < 60; i++)
      await service.sql(
        `insert into api_keys (id, user_id, key_hash, hint, scopes, created_by, created_at, revoked_at) values (?, ?, ?, ?, '{READ}', 'platform', ?, ?)`,
        [randomUUID(), user.userId, randomUUID(), `gk_tie${i}`, tie, tie],
      );
    const snapshot = (
      await service.sql<{ id: string }>(`select id from api_keys where user_id = ? order by created_at desc, id desc`, [user.userId])
    ).map((row) => row.id);
    expect(snapshot).toHaveLength(61);

    const byDefault = await service.graphql(API_KEYS, { u: user.userId });
    expect(byDefault.body.data.apiKeys.nodes.map((key: { id: string }) => key.id)).toEqual(snapshot.slice(0, 50));
    expect(byDefault.body.data.apiKeys.nextCursor).toEqual(expect.any(String));

    const issueAndRevoke = async () => {
      const issued = await service.graphql(`mutation($u: ID!) { createApiKey(userId: $u, scopes: [READ]) { id } }`, { u: user.userId });
      await service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: issued.body.data.createApiKey.id });
    };
    const { ids, pages } = await walkWhileInserting(async (after) => {
      const result = await service.graphql(API_KEYS, { u: user.userId, first: 7, after });
      expect(result.body.errors).toBeUndefined();
      expect(result.body.data.apiKeys.nodes.length).toBeLessThanOrEqual(7);
      return result.body.data.apiKeys;
    }, issueAndRevoke);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(snapshot.length / 7));
    expectEveryRowOnce(ids, snapshot);
  });

  it('answers NOT_FOUND to the platform for an unknown user', async () => {
    expect(codeOf(await service.graphql(API_KEYS, { u: randomUUID() }))).toBe('NOT_FOUND');
    expect(codeOf(await service.graphql(API_KEYS, { u: 'not-a-uuid' }))).toBe('NOT_FOUND');
  });
});
