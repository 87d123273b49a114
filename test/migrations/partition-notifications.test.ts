import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directUrl } from '../support/local-engines.js';
import { ensureData, gatewaySecret, QUICK, type Scale } from '../../bench/generate-data.js';
import { seededUuid } from '../../bench/lib/common.js';
import { openDatabase } from '../../src/infra/database/orm.js';
import { main, rebuildNotifications, REPLACED, RefusedError } from '../../scripts/partition-notifications.js';
import { publish, startService, type HttpResult, type TestService } from '../support/harness.js';

/**
 * The partition procedure (scripts/partition-notifications.ts) on a copy of the bench data at a
 * small scale, in a scratch database: the same rows, pages and counters after it, a feed page that
 * reads one partition, exact counters through every kind of write afterwards, the real service
 * serving the partitioned table, and the rollback to a plain table.
 */

const SEED = 20261123;
const PARTITIONS = 8;
// A small copy of the bench's data: same generator, a few hundred users, one heavy user.
const SCALE: Scale = {
  ...QUICK,
  organizations: 5,
  users: 300,
  notifications: 30_000,
  heavyUserNotifications: 5_000,
  properties: 200,
  cachedTraces: 20,
  heavyUserKeys: 2,
};
const user = (i: number) => seededUuid(SEED, 'user', i);
/** The heavy user and every 20th other user. */
const SAMPLED = [0, ...Array.from({ length: 14 }, (_, i) => 1 + i * 20)];
const PAGE = 25;

let url: string;
let admin: pg.Client;
let db: pg.Client;
let databaseName: string;

async function rows<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await db.query(sql, params)).rows as T[];
}

/** Counter rows that differ from a recount of the rows (a counter row at zero is a type without rows). */
async function counterDrift() {
  return rows(`
    select coalesce(c.user_id, r.user_id) as user_id, coalesce(c.notification_type, r.notification_type) as type,
           c.unread_count, c.read_count, r.unread, r.read
      from notification_counters c
      full join (select user_id, notification_type, count(*) filter (where not is_seen)::int as unread,
                        count(*) filter (where is_seen)::int as read
                   from notification_states() where archived_at is null group by user_id, notification_type) r
        on r.user_id = c.user_id and r.notification_type = c.notification_type
     where coalesce(c.unread_count, 0) <> coalesce(r.unread, 0) or coalesce(c.read_count, 0) <> coalesce(r.read, 0)`);
}

/** The feed page statement's shape (src/notifications/feed.data.ts): `PAGE + 1` rows newest first, after a keyset cursor. */
async function pageIds(userId: string, extra = '', params: unknown[] = [], after?: { created_at: Date; id: string }) {
  const all = [userId, ...params, ...(after ? [after.created_at, after.id] : [])];
  const keyset = after ? ` and (created_at, id) < ($${all.length - 1}, $${all.length})` : '';
  const result = await rows<{ id: string }>(
    `select id from notifications where user_id = $1${extra}${keyset} order by created_at desc, id desc limit ${PAGE + 1}`,
    all,
  );
  return result.map((r) => r.id);
}

interface Snapshot {
  rowsDigest: string;
  perUser: Record<string, number>;
  counters: unknown[];
  pages: Record<string, { first: string[]; deep: string[]; unread: string[]; typed: string[] }>;
}

/** The cursor of each sampled user's deep page (after row 250, or the middle of a shorter feed), fixed before the procedure. */
const cursors = new Map<string, { created_at: Date; id: string }>();

async function snapshot(): Promise<Snapshot> {
  const [{ digest }] = await rows(`select md5(string_agg(n::text, E'\\n' order by n.id)) as digest from notifications n`);
  const perUser = Object.fromEntries(
    (await rows(`select user_id, count(*)::int as n from notifications group by user_id`)).map((r) => [r.user_id, r.n]),
  );
  const counters = await rows(`select * from notification_counters order by user_id, notification_type`);
  const pages: Snapshot['pages'] = {};
  for (const i of SAMPLED) {
    const id = user(i);
    if (!cursors.has(id)) {
      const [cursor] = await rows(
        `select created_at, id from notifications where user_id = $1 order by created_at desc, id desc offset $2 limit 1`,
        [id, Math.min(250, Math.floor(perUser[id] / 2))],
      );
      cursors.set(id, cursor);
    }
    pages[id] = {
      first: await pageIds(id),
      deep: await pageIds(id, '', [], cursors.get(id)),
      unread: await pageIds(id, ' and is_seen = $2', [false]),
      typed: await pageIds(id, ' and notification_type = $2', ['task_due_soon']),
    };
  }
  return { rowsDigest: digest, perUser, counters, pages };
}

/** Every relation a plan scans (an UPDATE's ModifyTable names the parent it was asked for). */
function relations(plan: any): string[] {
  const own = plan['Relation Name'] && plan['Node Type'] !== 'ModifyTable' ? [plan['Relation Name']] : [];
  return [...own, ...(plan.Plans ?? []).flatMap(relations)];
}

async function explainRelations(sql: string, params: unknown[]) {
  const [row] = await rows(`explain (format json) ${sql}`, params);
  return relations(row['QUERY PLAN'][0].Plan);
}

async function indexDefinitions(table: string) {
  const result = await rows<{ name: string; def: string }>(
    `select indexname as name, replace(replace(indexdef, ' ON ONLY ', ' ON '), ' ON public.${table} ', ' ON public.T ') as def
       from pg_indexes where schemaname = 'public' and tablename = $1 order by indexname`,
    [table],
  );
  return result;
}

let before: Snapshot;
let indexesBefore: { name: string; def: string }[];

beforeAll(async () => {
  if (!process.env.DATABASE_URL) return;
  admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  databaseName = `partition_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${databaseName}`);
  const target = new URL(process.env.DATABASE_URL);
  target.pathname = `/${databaseName}`;
  url = target.toString();
  // The service's migrations create the schema, as the bench's service start does.
  const migrated = await openDatabase({ kind: 'postgres', url, poolMax: 1 });
  await migrated.close();
  // Its bulk load keeps session settings (triggers off) across statements: not through a pooler in transaction mode.
  await ensureData(directUrl(url), SCALE, SEED);
  db = new pg.Client({ connectionString: url });
  await db.connect();
  indexesBefore = await indexDefinitions('notifications');
  before = await snapshot();
}, 120_000);

afterAll(async () => {
  await db?.end();
  if (admin) {
    await admin.query(`drop database if exists ${databaseName} with (force)`);
    await admin.end();
  }
});

it('is refused on the embedded database (no DATABASE_URL) and on anything but PostgreSQL', async () => {
  expect(await main(['--partitions', '8'], {})).toBe(2);
  expect(await main(['--partitions', '8'], { DATABASE_URL: 'file:///tmp/data' })).toBe(2);
});

describe.skipIf(!process.env.DATABASE_URL)('partitioning notifications by hash (user_id)', () => {
  it('starts from the bench data with exact counters', async () => {
    expect(before.perUser[user(0)]).toBe(SCALE.heavyUserNotifications);
    expect(Object.keys(before.perUser)).toHaveLength(SCALE.users);
    expect(await counterDrift()).toEqual([]);
  });

  it('is refused for a bad partition count, changing nothing', async () => {
    await expect(rebuildNotifications(db, { partitions: 1 })).rejects.toThrow(RefusedError);
    const [{ relkind }] = await rows(`select relkind from pg_class where oid = 'notifications'::regclass`);
    expect(relkind).toBe('r');
  });

  it('keeps every row, page and counter, and builds the same indexes and triggers on the parent', async () => {
    const report = await rebuildNotifications(db, { partitions: PARTITIONS });
    expect(report.rows).toBe(SCALE.notifications);

    const after = await snapshot();
    expect(after.rowsDigest).toBe(before.rowsDigest);
    expect(after.perUser).toEqual(before.perUser);
    expect(after.counters).toEqual(before.counters);
    expect(after.pages).toEqual(before.pages);
    expect(await counterDrift()).toEqual([]);

    const [{ relkind }] = await rows(`select relkind from pg_class where oid = 'notifications'::regclass`);
    expect(relkind).toBe('p');
    const [{ n: parts }] = await rows(`select count(*)::int as n from pg_inherits where inhparent = 'notifications'::regclass`);
    expect(parts).toBe(PARTITIONS);
    const [{ def: pkey }] = await rows(`select pg_get_constraintdef(oid) as def from pg_constraint where conname = 'notifications_pkey'`);
    expect(pkey).toBe('PRIMARY KEY (user_id, id)');
    const indexesAfter = await indexDefinitions('notifications');
    const withoutKey = (list: { name: string; def: string }[]) => list.filter((i) => i.name !== 'notifications_pkey');
    expect(withoutKey(indexesAfter)).toEqual(withoutKey(indexesBefore));
    const triggers = await rows(
      `select tgname from pg_trigger where tgrelid = 'notifications'::regclass and not tgisinternal order by tgname`,
    );
    expect(triggers.map((t) => t.tgname)).toEqual([
      'notifications_count_delete',
      'notifications_count_insert',
      'notifications_count_update',
      'notifications_marks_pending',
    ]);
    // The old table is kept, frozen: no triggers, so nothing it still sees (a user's cascade) counts twice.
    const kept = await rows(`select tgname from pg_trigger where tgrelid = $1::regclass and not tgisinternal`, [REPLACED]);
    expect(kept).toEqual([]);
    const [{ n: keptRows }] = await rows(`select count(*)::int as n from ${REPLACED}`);
    expect(keptRows).toBe(SCALE.notifications);
  });

  it('refuses to run twice', async () => {
    expect(await main(['--partitions', '8'], { DATABASE_URL: url })).toBe(2);
    await db.query(`drop table ${REPLACED}`);
    await expect(rebuildNotifications(db, { partitions: PARTITIONS })).rejects.toThrow('already partitioned');
  });

  it("reads one partition for a user's page, search count, mark by id and mark of everything", async () => {
    const id = user(21);
    const [{ part }] = await rows(`select tableoid::regclass::text as part from notifications where user_id = $1 limit 1`, [id]);
    expect(part).toMatch(/^notifications_p\d+$/);
    // Bound parameters, as the service sends them: the plan is made for the value, so pruned when planned.
    expect(
      await explainRelations(`select id from notifications where user_id = $1 order by created_at desc, id desc limit 26`, [id]),
    ).toEqual([part]);
    expect(await explainRelations(`select count(*) from notifications where user_id = $1 and title ilike $2`, [id, '%smith%'])).toEqual([
      part,
    ]);
    expect(
      await explainRelations(`update notifications set is_seen = true, seen_at = now() where user_id = $1 and id = any($2::uuid[])`, [
        id,
        before.pages[id].first.slice(0, 3),
      ]),
    ).toEqual([part]);
    // A mark of everything as feed.data.ts writes it: the user's advisory lock first, in a CTE joined to the update.
    expect(
      await explainRelations(
        `with serialized as materialized (select pg_advisory_xact_lock(${0x6e6f7466}, hashtext($1::text)))
         update notifications set is_seen = $2, seen_at = now() from serialized where user_id = $3 and is_seen = $4`,
        [id, true, id, false],
      ),
    ).toEqual([part]);
  });

  describe('the service on the partitioned table', () => {
    let service: TestService;
    beforeAll(async () => {
      // Users are deleted by hand in SQL below, which replaces no principals' version: keep none.
      service = await startService({ DATABASE_URL: url, PRINCIPAL_CACHE_MAX_ENTRIES: '0' });
    });
    afterAll(() => service?.close());

    const call = (i: number, operationId: string, variables: Record<string, unknown> = {}) =>
      service.call(gatewaySecret(SEED, i), { operationId, variables });
    const ok = (result: HttpResult) => {
      expect(result.status, result.text).toBe(200);
      return result.body.data;
    };
    const counts = async (i: number) => ok(await call(i, 'getNotificationCounts'));
    const list = async (i: number, variables: Record<string, unknown> = {}) => ok(await call(i, 'listNotifications', variables));

    it('serves pages and counts as before', async () => {
      for (const i of [0, 1, 21, 41, 61]) {
        const id = user(i);
        const page = await list(i, { limit: PAGE });
        expect(page.notifications.map((n: { id: string }) => n.id)).toEqual(before.pages[id].first.slice(0, PAGE));
        expect(page.total).toBe(before.perUser[id]);
        // The next page by cursor, where there is one (always for the heavy user).
        expect(page.nextCursor === null).toBe(before.perUser[id] <= PAGE);
        if (page.nextCursor !== null) {
          const next = await list(i, { limit: PAGE, cursor: page.nextCursor });
          const second = await rows<{ id: string }>(
            `select id from notifications where user_id = $1 order by created_at desc, id desc offset ${PAGE} limit ${PAGE}`,
            [id],
          );
          expect(next.notifications.map((n: { id: string }) => n.id)).toEqual(second.map((r) => r.id));
        }
        const c = await counts(i);
        expect(c.unreadCount + c.readCount).toBe(before.perUser[id]);
      }
    });

    it('keeps counters exact through publishes, marks by id and marks of everything, racing on one user', async () => {
      const heavy = user(0);
      const ids = before.pages[heavy].unread.slice(0, 20);
      const published = await publish(
        service,
        user(21),
        Array.from({ length: 40 }, (_, n) => ({ title: `after the swap ${n}` })),
      );
      expect(published).toHaveLength(40);
      expect((await list(21, { limit: 1 })).total).toBe(before.perUser[user(21)] + 40);

      const results = await Promise.all([
        call(0, 'markAllNotificationsRead', { isSeen: true }),
        call(0, 'markNotificationsRead', { notificationIds: ids.slice(0, 10), isSeen: true }),
        publish(
          service,
          heavy,
          Array.from({ length: 25 }, (_, n) => ({ title: `raced ${n}` })),
        ),
        call(0, 'markNotificationsRead', { notificationIds: ids.slice(10), isSeen: true }),
        call(0, 'markAllNotificationsRead', { isSeen: false, notificationTypeFilter: 'task_due_soon' }),
      ]);
      for (const result of results) if (!Array.isArray(result)) ok(result);
      expect(await counterDrift()).toEqual([]);

      const c = await counts(0);
      const [recount] = await rows(
        `select count(*) filter (where not is_seen)::int as unread, count(*) filter (where is_seen)::int as read from notification_states() where user_id = $1`,
        [heavy],
      );
      expect({ unread: c.unreadCount, read: c.readCount }).toEqual(recount);
      expect(c.unreadCount + c.readCount).toBe(SCALE.heavyUserNotifications + 25);
      ok(await call(0, 'markAllNotificationsRead', { isSeen: false }));
      expect((await counts(0)).readCount).toBe(0);
      expect(await counterDrift()).toEqual([]);
    });

    it("keeps counters exact when some of a user's rows are deleted, and when a user is (cascade)", async () => {
      const [deleted, gone] = [user(41), user(61)];
      // The older half of the user's rows, in one statement.
      const removed = await db.query(
        `delete from notifications where user_id = $1 and id in
           (select id from notifications where user_id = $1 order by created_at, id limit $2)`,
        [deleted, Math.ceil(before.perUser[deleted] / 2)],
      );
      expect(removed.rowCount).toBeGreaterThan(0);
      expect(await counterDrift()).toEqual([]);
      expect((await counts(41)).unreadCount + (await counts(41)).readCount).toBe(before.perUser[deleted] - removed.rowCount!);

      await db.query(`delete from users where id = $1`, [gone]);
      expect(await rows(`select 1 from notifications where user_id = $1`, [gone])).toEqual([]);
      expect(await rows(`select 1 from notification_counters where user_id = $1`, [gone])).toEqual([]);
      expect(await counterDrift()).toEqual([]);
      expect((await call(61, 'getNotificationCounts')).status).toBe(401);
    });

    it('rolls back to a plain table with the same rows while the service runs, and partitions again', async () => {
      const partitioned = await snapshot();
      const back = await rebuildNotifications(db, { partitions: null });
      expect(back.rows).toBe(Object.values(partitioned.perUser).reduce((a, b) => a + b, 0));
      const [{ relkind }] = await rows(`select relkind from pg_class where oid = 'notifications'::regclass`);
      expect(relkind).toBe('r');
      const [{ def }] = await rows(`select pg_get_constraintdef(oid) as def from pg_constraint where conname = 'notifications_pkey'`);
      expect(def).toBe('PRIMARY KEY (id)');
      expect(await indexDefinitions('notifications')).toEqual(indexesBefore);
      expect(await snapshot()).toEqual(partitioned);
      // The running service's next statements find the plain table under the same name.
      ok(await call(21, 'markNotificationsRead', { notificationIds: partitioned.pages[user(21)].first.slice(0, 3), isSeen: true }));
      expect((await list(21, { limit: PAGE })).notifications.map((n: { id: string }) => n.id)).toEqual(
        partitioned.pages[user(21)].first.slice(0, PAGE),
      );
      expect(await counterDrift()).toEqual([]);

      await db.query(`drop table ${REPLACED}`);
      expect(await main(['--partitions', '4'], { DATABASE_URL: url })).toBe(0);
      expect(await rows(`select 1 from pg_inherits where inhparent = 'notifications'::regclass`)).toHaveLength(4);
      expect(await counterDrift()).toEqual([]);
    });
  });
});
