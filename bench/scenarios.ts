/**
 * The scenarios: what each server is asked, per connection. Every connection speaks for its own
 * users with their own keys (thousands of keys per scenario), so no single key's rate window is
 * what is measured. The service and both floors receive byte-identical requests; PostGraphile
 * receives its equivalent of the feed query.
 */
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { encodeCursor } from '../src/notifications/cursor.js';
import {
  feedSizes,
  gatewaySecret,
  restoreHeavyUserReadState,
  skipTraceSecret,
  SURNAMES,
  type RawAddress,
  type Scale,
} from './generate-data.js';
import { prng, seededUuid } from './lib/common.js';
import type { HttpRequest } from './lib/load.js';
import { ROOT, type ServerKind } from './lib/servers.js';

export type { ServerKind };

export interface Target {
  server: ServerKind;
  /** How the row is labelled in the table. */
  label: string;
  requests: (connection: number) => HttpRequest[];
  /** Reduces a response to what must be equal across targets (null: not compared). */
  comparable?: (body: unknown) => unknown;
  /** This target's own load, instead of the scenario's. */
  load?: Scenario['load'];
}

export interface Scenario {
  id: string;
  title: string;
  /** Which target the ratios are taken of (the service), and against which. */
  targets: Target[];
  /**
   * A load other than the run's 32 connections for its seconds: for requests that take seconds
   * each (a mark of a 100,000-row feed), a count of requests per round on few connections, each
   * request waited for up to `timeoutSeconds`.
   */
  load?: { connections: number; requestsPerRound: number; timeoutSeconds: number };
  /**
   * The load of the servers that do the scenario's work by rewriting every row (the naive floor, and
   * a baseline built from a tree before the read marks): seconds per request there, so a few.
   */
  rewriteLoad?: Scenario['load'];
  /** The requests of the service built from the tree at `root` (a baseline), where they depend on the tree. */
  requestsOfTree?: (root: string) => Target['requests'];
}

interface UserKey {
  userId: string;
  key: string;
}

export interface Fixture {
  typical: UserKey[];
  heavy: { userId: string; keys: string[] };
  heavyRows: number;
  deep: (UserKey & { cursor: string })[];
  mark: (UserKey & { ids: string[] })[];
  traces: RawAddress[];
  skipTraceKeys: string[];
}

// A word list, kept dense.
// prettier-ignore
const TYPES = ['task_due_soon', 'task_assigned', 'deal_stage_changed', 'reply_received', 'note_mention', 'contact_assigned', 'task_overdue', 'deal_assigned', 'contact_created', 'call_missed', 'deal_created', 'task_completed', 'call_voicemail', 'skip_trace_completed'];

/** Users, keys, cursors and ids for the scenarios, from the seed and the generated database. */
export async function loadFixture(url: string, scale: Scale, seed: number, connections: number): Promise<Fixture> {
  const sizes = feedSizes(scale, seed);
  const random = prng(seed ^ 0xfeed);
  const user = (i: number): UserKey => ({ userId: seededUuid(seed, 'user', i), key: gatewaySecret(seed, i) });

  // A uniform sample of the users other than the heavy one: feed sizes as the log-normal has them.
  const others = Array.from({ length: scale.users - 1 }, (_, i) => i + 1);
  for (let i = others.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [others[i], others[j]] = [others[j], others[i]];
  }
  const sample = others.slice(0, 2048);

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // Deep pages: the page after row 250 of users with at least 300 rows.
    const deepUsers = others.filter((i) => sizes[i] >= 300).slice(0, 256);
    const deep: Fixture['deep'] = [];
    for (const i of deepUsers) {
      const u = user(i);
      const { rows } = await client.query<{ id: string; created_at: Date }>(
        `select id, created_at from notifications where user_id = $1 order by created_at desc, id desc offset 249 limit 1`,
        [u.userId],
      );
      if (rows[0]) deep.push({ ...u, cursor: encodeCursor(u.userId, { createdAt: rows[0].created_at, id: rows[0].id }) });
    }

    // Marks: four users per connection, ten of each one's newest ids; reset to unread before the run.
    const markUsers = sample.filter((i) => sizes[i] >= 10).slice(0, connections * 4);
    const mark: Fixture['mark'] = [];
    for (const i of markUsers) {
      const u = user(i);
      const { rows } = await client.query<{ id: string }>(
        `select id from notifications where user_id = $1 order by created_at desc, id desc limit 10`,
        [u.userId],
      );
      mark.push({ ...u, ids: rows.map((r) => r.id) });
    }
    await client.query(`update notifications set is_seen = false, seen_at = null where id = any($1::uuid[]) and is_seen`, [
      mark.flatMap((m) => m.ids),
    ]);

    // The heavy user's feed: back to its generated read state (the markAll scenario flips all of it).
    await restoreHeavyUserReadState(client, scale, seed);

    // Skip trace: reset the ledger, the audit and the balances the previous run spent.
    await client.query(`truncate skip_trace_credit_ledger, skip_trace_requests`);
    await client.query(`update organizations set skip_trace_credits = 1000000000`);
    const { rows: traces } = await client.query<RawAddress>(
      `select line1, city, state, zip from bench_meta.trace_inputs order by address_key`,
    );

    return {
      typical: sample.map(user),
      heavy: {
        userId: seededUuid(seed, 'user', 0),
        keys: Array.from({ length: scale.heavyUserKeys }, (_, k) => gatewaySecret(seed, 0, k)),
      },
      heavyRows: sizes[0],
      deep,
      mark,
      traces,
      skipTraceKeys: Array.from({ length: scale.organizations }, (_, o) => skipTraceSecret(seed, o)),
    };
  } finally {
    await client.end();
  }
}

// --- Requests --------------------------------------------------------------------------------

const json = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });
const call = (key: string, operationId: string, variables: Record<string, unknown>): HttpRequest => ({
  method: 'POST',
  path: '/api/v1/call',
  headers: json(key),
  body: JSON.stringify({ operationId, variables }),
});

/** Items i, i + n, i + 2n, … (at most `max`), so each connection gets its own share of a list. */
function share<T>(list: T[], connection: number, connections: number, max = 64): T[] {
  const mine = list.filter((_, i) => i % connections === connection);
  return (mine.length ? mine : [list[connection % list.length]]).slice(0, max);
}

/** A tree's own gateway feed document (its folder moved over time), so a baseline is asked only what its schema has. */
const listDocumentOf = (root: string) => {
  const path = ['src/http/gateway/operations', 'src/server/gateway/operations']
    .map((folder) => `${root}/${folder}/listNotifications.graphql`)
    .find((candidate) => existsSync(candidate));
  if (!path) throw new Error(`${root} has no gateway listNotifications.graphql`);
  return readFileSync(path, 'utf8');
};
const PEER_FEED = `query feed($userId: UUID!) {
  allNotifications(condition: {userId: $userId}, orderBy: [CREATED_AT_DESC, ROW_ID_DESC], first: 25) {
    nodes { rowId notificationType isSeen title body createdAt seenAt contactId dealId noteId replyId taskId callId actionType actionTargetId }
    totalCount
    pageInfo { hasNextPage endCursor }
  }
}`;

const peerFeed = (u: UserKey): HttpRequest => ({
  method: 'POST',
  path: '/graphql',
  headers: json(u.key),
  body: JSON.stringify({ query: PEER_FEED, variables: { userId: u.userId } }),
});
const graphqlFeedOf =
  (document: string) =>
  (u: UserKey): HttpRequest => ({
    method: 'POST',
    path: '/graphql',
    headers: json(u.key),
    body: JSON.stringify({ query: document, variables: {} }),
  });
const serviceGraphqlFeed = graphqlFeedOf(listDocumentOf(ROOT));

// What must agree across targets: the data itself for the REST twins, ids and total against the peer.
type Page = { notifications: { id: string }[]; total: number };
// `archivedAt: null` left out: a baseline from before archiving (9f105fc) has no such field, and the rest must still agree.
const withoutNullArchivedAt = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(withoutNullArchivedAt);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k, v]) => !(k === 'archivedAt' && v === null))
      .map(([k, v]) => [k, withoutNullArchivedAt(v)]),
  );
};
const restData = (body: unknown) => withoutNullArchivedAt((body as { data: unknown }).data);
const pageOf = (body: unknown) => {
  const page = restData(body) as Page;
  return { ids: page.notifications.map((n) => n.id), total: page.total };
};
const graphqlPageOf = (body: unknown) => {
  const page = (body as { data: { notifications: Page } }).data.notifications;
  return { ids: page.notifications.map((n) => n.id), total: page.total };
};
const peerPageOf = (body: unknown) => {
  const page = (body as { data: { allNotifications: { nodes: { rowId: string }[]; totalCount: number } } }).data.allNotifications;
  return { ids: page.nodes.map((n) => n.rowId), total: page.totalCount };
};

export function buildScenarios(f: Fixture, connections: number): Scenario[] {
  const twins = (requests: (connection: number) => HttpRequest[], comparable: (body: unknown) => unknown = restData): Target[] => [
    { server: 'service', label: 'service', requests, comparable },
    { server: 'floor', label: 'same-SQL floor', requests, comparable },
    { server: 'naive', label: 'naive floor', requests, comparable },
  ];
  const typical = (c: number) => share(f.typical, c, connections);
  const typicalFeed = (c: number) => typical(c).map((u) => call(u.key, 'listNotifications', {}));
  const heavyKeys = (c: number) =>
    share(
      f.heavy.keys.map((key) => ({ userId: f.heavy.userId, key })),
      c,
      connections,
    );

  const rewriteLoad = { connections: 1, requestsPerRound: 2, timeoutSeconds: 120 };
  return [
    {
      id: 'feed',
      title: 'listNotifications, first page (typical users)',
      targets: [
        ...twins(typicalFeed, pageOf),
        { server: 'postgraphile', label: 'PostGraphile', requests: (c) => typical(c).map(peerFeed), comparable: peerPageOf },
      ],
    },
    {
      id: 'feed-deep',
      title: 'listNotifications, deep page by cursor (after row 250)',
      targets: twins((c) => share(f.deep, c, connections).map((u) => call(u.key, 'listNotifications', { cursor: u.cursor }))),
    },
    {
      id: 'feed-type',
      title: 'listNotifications with notificationTypeFilter',
      targets: twins((c) =>
        typical(c).map((u, i) => call(u.key, 'listNotifications', { notificationTypeFilter: TYPES[(c + i) % TYPES.length] })),
      ),
    },
    {
      id: 'feed-search',
      title: 'listNotifications with searchTerm',
      targets: twins((c) =>
        typical(c).map((u, i) => call(u.key, 'listNotifications', { searchTerm: SURNAMES[(c * 7 + i) % SURNAMES.length].toLowerCase() })),
      ),
    },
    {
      id: 'feed-heavy',
      title: `listNotifications, first page (heavy user, ${f.heavy.keys.length} keys)`,
      targets: [
        ...twins((c) => heavyKeys(c).map((u) => call(u.key, 'listNotifications', {})), pageOf),
        { server: 'postgraphile', label: 'PostGraphile', requests: (c) => heavyKeys(c).map(peerFeed), comparable: peerPageOf },
      ],
    },
    {
      id: 'counts',
      title: 'getNotificationCounts (typical users)',
      targets: twins((c) => typical(c).map((u) => call(u.key, 'getNotificationCounts', {}))),
    },
    {
      id: 'counts-type',
      title: 'getNotificationCounts with notificationTypeFilter',
      targets: twins((c) =>
        typical(c).map((u, i) => call(u.key, 'getNotificationCounts', { notificationTypeFilter: TYPES[(c + i) % TYPES.length] })),
      ),
    },
    {
      id: 'counts-heavy',
      title: 'getNotificationCounts (heavy user)',
      targets: twins((c) => heavyKeys(c).map((u) => call(u.key, 'getNotificationCounts', {}))),
    },
    {
      id: 'mark',
      title: 'markNotificationsRead, 10 ids (read, then unread again)',
      targets: twins(
        (c) =>
          share(f.mark, c, connections, 4).flatMap((u) =>
            [true, false].map((isSeen) => call(u.key, 'markNotificationsRead', { notificationIds: u.ids, isSeen })),
          ),
        () => null,
      ),
    },
    {
      id: 'markAll',
      title: `markAllNotificationsRead, the heavy user's ${f.heavyRows.toLocaleString('en-US')} rows (read, then unread again; one connection)`,
      // One request at a time: each one is the whole feed, and a user's marks run one after another anyway. A mark of
      // everything costs milliseconds since the read marks, so a round holds enough of them for a p99.
      load: { connections: 1, requestsPerRound: 200, timeoutSeconds: 120 },
      rewriteLoad,
      targets: twins(
        () => [true, false].map((isSeen) => call(f.heavy.keys[0], 'markAllNotificationsRead', { isSeen })),
        () => null,
      ).map((t) => (t.server === 'naive' ? { ...t, load: rewriteLoad } : t)),
    },
    {
      id: 'skiptrace',
      title: 'skip trace, cached result (credit charge, ledger and audit rows)',
      targets: twins(
        (c) => {
          const key = f.skipTraceKeys[c % f.skipTraceKeys.length];
          return share(f.traces, c, connections).map(
            (address) =>
              ({ method: 'POST', path: '/api/v1/skiptrace', headers: json(key), body: JSON.stringify({ address }) }) as HttpRequest,
          );
        },
        (body) => ({ status: (body as { status: string }).status, persons: (body as { persons: unknown }).persons }),
      ),
    },
    {
      id: 'graphql-feed',
      title: 'the feed query over GraphQL (/graphql), typical users',
      requestsOfTree: (root) => {
        const request = graphqlFeedOf(listDocumentOf(root));
        return (c) => typical(c).map(request);
      },
      targets: [
        {
          server: 'service',
          label: 'service /graphql',
          requests: (c) => typical(c).map(serviceGraphqlFeed),
          comparable: graphqlPageOf,
        },
        // The floors have no /graphql: theirs is the gateway's feed, the same page.
        { server: 'floor', label: 'same-SQL floor (gateway)', requests: typicalFeed, comparable: pageOf },
        { server: 'naive', label: 'naive floor (gateway)', requests: typicalFeed, comparable: pageOf },
        { server: 'postgraphile', label: 'PostGraphile', requests: (c) => typical(c).map(peerFeed), comparable: peerPageOf },
      ],
    },
  ];
}

/** Sends each target's first request once and checks they answer 200 and agree on the result. */
export async function verifyScenario(scenario: Scenario, urls: Record<ServerKind, string>): Promise<string | null> {
  const seen: { label: string; value: string }[] = [];
  for (const target of scenario.targets) {
    const request = target.requests(0)[0];
    const res = await fetch(urls[target.server] + request.path, { method: request.method, headers: request.headers, body: request.body });
    const text = await res.text();
    if (res.status !== 200) return `${target.label} answered ${res.status}: ${text.slice(0, 300)}`;
    const body = JSON.parse(text) as unknown;
    if ((body as { errors?: unknown }).errors) return `${target.label} answered errors: ${text.slice(0, 300)}`;
    const value = target.comparable?.(body);
    if (value !== null && value !== undefined) seen.push({ label: target.label, value: canonical(value) });
  }
  const differing = seen.find((s) => s.value !== seen[0].value);
  return differing
    ? `${differing.label} disagrees with ${seen[0].label}: ${differing.value.slice(0, 200)} vs ${seen[0].value.slice(0, 200)}`
    : null;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
