import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';
import { startReplicaPair, type ReplicaPair } from '../support/local-engines.js';
import { scrapedMetric } from '../support/metrics.js';
import { eventually } from '../support/webhook-receiver.js';

/**
 * DATABASE_REPLICA_URL against a real primary and streaming replica this file starts itself
 * (Debian's PostgreSQL 15). With REDIS_URL set the users' write positions are kept in Redis,
 * without it in process: the suite runs both ways.
 */
let pair: ReplicaPair;
let service: TestService;
let primary: pg.Client;
let replica: pg.Client;

beforeAll(async () => {
  pair = await startReplicaPair();
  // 2 s rather than 500 ms: on a loaded machine a slow poll would send reads to the primary and
  // spoil the stale reads that show where reads go.
  service = await startService({
    DATABASE_URL: pair.primaryUrl,
    DATABASE_REPLICA_URL: pair.replicaUrl,
    DATABASE_REPLICA_TIMEOUT_MS: '2000',
  });
  primary = new pg.Client({ connectionString: pair.primaryUrl });
  await primary.connect();
  await connectReplica();
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([primary?.end(), replica?.end()]);
  await service?.close();
  pair?.stop();
});

async function connectReplica() {
  replica = new pg.Client({ connectionString: pair.replicaUrl });
  replica.on('error', () => undefined);
  await replica.connect();
}

/** Waits until the replica has replayed everything the primary has written so far. */
async function caughtUp() {
  const [{ lsn }] = (await primary.query(`select pg_current_wal_insert_lsn()::text as lsn`)).rows;
  const replayed = async () =>
    (await replica.query(`select pg_last_wal_replay_lsn() >= $1::pg_lsn as done`, [lsn])).rows[0].done as boolean;
  await eventually(replayed, Boolean);
}

async function pauseReplay() {
  await caughtUp();
  await replica.query('select pg_wal_replay_pause()');
  // The service polls the replica's position every few milliseconds: let it see this one.
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const resumeReplay = () => replica.query('select pg_wal_replay_resume()');

const call = async (user: Provisioned, operationId: string, variables: Record<string, unknown> = {}) => {
  const result = await service.call(user.key, { operationId, variables });
  expect(result.status, result.text).toBe(200);
  return result.body.data;
};
const unread = async (user: Provisioned) => (await call(user, 'getNotificationCounts')).unreadCount as number;
const listed = async (user: Provisioned, variables: Record<string, unknown> = {}) =>
  (await call(user, 'listNotifications', variables)).notifications.map((n: { id: string }) => n.id) as string[];

/** A row written on the primary behind the service's back: nobody's write position records it. */
async function insertBehindTheService(userId: string) {
  const id = randomUUID();
  await primary.query(
    `insert into notifications (user_id, id, notification_type, is_seen, title, body, created_at) values ($1, $2, 'deal_created', false, 'behind', 'b', now())`,
    [userId, id],
  );
  return id;
}

/** The routed reads' counters on /metrics: where reads went and why the primary answered. */
async function routing() {
  const reads = (servedBy: string) => scrapedMetric(service, 'crm_db_replica_routed_reads_total', { served_by: servedBy });
  const fallbacks = (reason: string) => scrapedMetric(service, 'crm_db_replica_fallbacks_total', { reason });
  const [replica, primary, behind_write, unreachable, read_failed] = await Promise.all([
    reads('replica'),
    reads('primary'),
    fallbacks('behind_write'),
    fallbacks('unreachable'),
    fallbacks('read_failed'),
  ]);
  return { replica, primary, behind_write, unreachable, read_failed };
}
type Routing = Awaited<ReturnType<typeof routing>>;
/** What moved since `before`; every primary read is counted under one reason. */
async function routedSince(before: Routing) {
  const after = await routing();
  expect(after.primary).toBe(after.behind_write + after.unreachable + after.read_failed);
  return Object.fromEntries(Object.entries(after).map(([name, count]) => [name, count - before[name as keyof Routing]])) as Routing;
}

describe('reads on the replica, each user reading their own writes, across instances', () => {
  // The write positions are shared through Redis: a write on one instance holds for reads on another.
  it.skipIf(!process.env.REDIS_URL)('on another instance too (Redis)', { timeout: 60_000 }, async () => {
    const peer = await startService({ DATABASE_URL: pair.primaryUrl, DATABASE_REPLICA_URL: pair.replicaUrl });
    try {
      const user = await service.provision();
      const ids = await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }]);
      await pauseReplay();
      try {
        await call(user, 'markNotificationsRead', { notificationIds: [ids[0]], isSeen: true });
        const fromPeer = await peer.call(user.key, { operationId: 'getNotificationCounts', variables: {} });
        expect(fromPeer.body.data.unreadCount).toBe(1);
      } finally {
        await resumeReplay();
      }
    } finally {
      await peer.close();
    }
  });
});

describe('reads on the replica, each user reading their own writes', () => {
  it('serves other users from the replica (stale while its replay is paused) and keys from the primary', async () => {
    const [writer, other] = [await service.provision(), await service.provision()];
    await publish(service, writer.userId, [{ title: 'w' }]);
    await publish(service, other.userId, [{ title: 'o' }]);
    await pauseReplay();
    try {
      await insertBehindTheService(other.userId);
      // The replica has not replayed the insert: the other user's reads went there.
      expect(await unread(other)).toBe(1);
      expect(await listed(other)).toHaveLength(1);
      // A user and key created while the replica stands still: the key is found on the primary.
      const fresh = await service.provision();
      expect(await unread(fresh)).toBe(0);
    } finally {
      await resumeReplay();
    }
    await eventually(
      () => unread(other),
      (n) => n === 2,
    );
  });

  it('after a mark, an archive, a mark of everything and a publish to them, the user reads their own write while the replica is behind', async () => {
    const user = await service.provision();
    const ids = await publish(service, user.userId, [{ title: 'a' }, { title: 'b' }, { title: 'c' }]);
    await pauseReplay();
    try {
      await call(user, 'markNotificationsRead', { notificationIds: [ids[0]], isSeen: true });
      expect(await unread(user)).toBe(2);

      await call(user, 'archiveNotifications', { notificationIds: [ids[1]], archived: true });
      // Rows of one publish share their time: order by id among them.
      expect((await listed(user)).sort()).toEqual([ids[0], ids[2]].sort());

      await call(user, 'markAllNotificationsRead', { isSeen: true });
      expect(await unread(user)).toBe(0);

      const [added] = await publish(service, user.userId, [{ title: 'd' }]);
      expect((await listed(user)).sort()).toEqual([added, ids[0], ids[2]].sort());
      expect(await unread(user)).toBe(1);
    } finally {
      await resumeReplay();
    }
  });

  it('sends a user back to the replica once it has replayed their write', async () => {
    const user = await service.provision();
    await publish(service, user.userId, [{ title: 'a' }]);
    await pauseReplay();
    try {
      await insertBehindTheService(user.userId);
      expect(await unread(user)).toBe(1);
    } finally {
      await resumeReplay();
    }
  });
});

describe('the replica on /metrics', () => {
  it('counts reads the replica served, reads behind the caller’s own write, and the replay lag', async () => {
    const [writer, other] = [await service.provision(), await service.provision()];
    await publish(service, other.userId, [{ title: 'o' }]);
    await publish(service, writer.userId, [{ title: 'w' }]);
    await pauseReplay();
    try {
      expect(await scrapedMetric(service, 'crm_db_replica_up')).toBe(1);
      let before = await routing();
      await call(writer, 'markAllNotificationsRead', { isSeen: true });
      expect(await unread(writer)).toBe(0);
      const behind = await routedSince(before);
      expect(behind.behind_write).toBeGreaterThan(0);
      expect({ ...behind, behind_write: 0, primary: 0 }).toEqual({
        replica: 0,
        primary: 0,
        behind_write: 0,
        unreachable: 0,
        read_failed: 0,
      });

      await insertBehindTheService(other.userId);
      // The replica stands still while the primary wrote.
      expect(await scrapedMetric(service, 'crm_db_replica_replay_lag_bytes')).toBeGreaterThan(0);
      before = await routing();
      expect(await unread(other)).toBe(1);
      const served = await routedSince(before);
      expect(served.replica).toBeGreaterThan(0);
      expect(served.primary).toBe(0);
    } finally {
      await resumeReplay();
    }
  });
});

/** Each user reading in a loop (counts and pages in turn) until stopped; what was not a 200 is kept. */
function readLoad(users: Provisioned[]) {
  const state = { reads: 0, failures: [] as string[], running: true, stop: async () => undefined as void };
  const loops = users.map(async (user, i) => {
    while (state.running) {
      const result = await service.call(user.key, { operationId: i % 2 ? 'listNotifications' : 'getNotificationCounts', variables: {} });
      state.reads++;
      if (result.status !== 200) state.failures.push(result.text);
    }
  });
  state.stop = async () => {
    state.running = false;
    await Promise.all(loops);
  };
  return state;
}

describe('a replica that stops', () => {
  it('sends reads to the primary when the replica holds them past DATABASE_REPLICA_TIMEOUT_MS (frozen)', { timeout: 60_000 }, async () => {
    const user = await service.provision();
    await publish(service, user.userId, [{ title: 'x' }]);
    await caughtUp();
    const before = await routing();
    pair.freezeReplica(true);
    try {
      const started = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? unread(user) : listed(user).then((ids) => ids.length))),
      );
      expect(answers).toEqual([1, 1, 1, 1, 1, 1]);
      // One timeout (2 s here) at most, then the primary.
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await unread(user)).toBe(1);
      // The first reads waited for the replica, then the rest went straight to the primary.
      const moved = await routedSince(before);
      expect(moved.read_failed).toBeGreaterThan(0);
      expect(moved.unreachable).toBeGreaterThan(0);
    } finally {
      pair.freezeReplica(false);
    }
  });

  it(
    'answers every read while the replica is stopped mid-load (immediate shutdown), and reads from it again once it is back',
    { timeout: 120_000 },
    async () => {
      const users = await Promise.all(Array.from({ length: 4 }, () => service.provision()));
      for (const user of users) await publish(service, user.userId, [{ title: 'x' }, { title: 'y' }]);
      const load = readLoad(users);
      const { failures } = load;
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = load.reads;
      const routedBefore = await routing();
      await replica.end();
      pair.stopReplica('immediate');
      const afterStop = load.reads;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await load.stop();
      expect(failures).toEqual([]);
      expect(load.reads - before).toBeGreaterThan(20);
      // Every call begun after the stop (all but the four in flight) was answered by the primary, for the replica's absence.
      const moved = await routedSince(routedBefore);
      expect(moved.unreachable + moved.read_failed).toBeGreaterThanOrEqual(load.reads - afterStop - users.length);
      expect(moved.unreachable + moved.read_failed).toBeGreaterThan(0);
      expect(await scrapedMetric(service, 'crm_db_replica_up')).toBe(0);
      expect(await scrapedMetric(service, 'crm_db_replica_replay_lag_bytes')).toBe(0);

      await pair.startReplica();
      await connectReplica();
      const [user] = users;
      await pauseReplay();
      try {
        await insertBehindTheService(user.userId);
        // Stale again: its reads are back on the replica.
        const routedBack = await routing();
        await eventually(
          () => unread(user),
          (n) => n === 2,
        );
        expect((await routedSince(routedBack)).replica).toBeGreaterThan(0);
      } finally {
        await resumeReplay();
      }
    },
  );
});
