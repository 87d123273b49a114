/**
 * The benchmark's data set, generated in PostgreSQL with set-based SQL and reproducible from a seed.
 *
 * Full scale: 100 organizations, 10,000 users, 1,000,000 notifications (per-user counts log-normal,
 * median ≈ 60, p99 ≈ 500; user 0 is the heavy user with 100,000), a third of them read, skewed over
 * the 14 catalog types; 100,000 property records with owners and persons; a cache of skip trace
 * results for a subset of them. Every user has a gateway key (the heavy user 64), every
 * organization a skip trace key and plenty of credits; all keys are derived from the seed.
 *
 * The schema must exist (the service's migrations). Bulk loads run with triggers and foreign-key
 * checks off (`session_replication_role = replica`) and the secondary indexes dropped; then the
 * indexes are rebuilt from their own definitions and the counter rows filled in one statement.
 *
 * CLI: `tsx bench/generate-data.ts [--quick] [--force]` against `BENCH_DATABASE_URL`.
 */
import pg from 'pg';
import {
  addressKey,
  normalizeActor,
  normalizeEntityName,
  normalizePersonNamePart,
  standardizeAddress,
  traceCacheKey,
} from '../src/address/index.js';
import { benchSecret, log, normal, prng, seededUuid, sha256Hex } from './lib/common.js';

export interface Scale {
  name: 'full' | 'quick';
  organizations: number;
  users: number;
  notifications: number;
  heavyUserNotifications: number;
  properties: number;
  /** Properties whose (actor-less) trace result is in the cache, for the cached skip trace scenario. */
  cachedTraces: number;
  /** Gateway keys of the heavy user (many keys, so no single key's window is what is measured). */
  heavyUserKeys: number;
}

export const FULL: Scale = {
  name: 'full',
  organizations: 100,
  users: 10_000,
  notifications: 1_000_000,
  heavyUserNotifications: 100_000,
  properties: 100_000,
  cachedTraces: 2_000,
  heavyUserKeys: 64,
};
export const QUICK: Scale = {
  name: 'quick',
  organizations: 10,
  users: 500,
  notifications: 55_000,
  heavyUserNotifications: 10_000,
  properties: 5_000,
  cachedTraces: 200,
  heavyUserKeys: 64,
};

export const DEFAULT_SEED = 20261123;
/** Bump when the generator changes, so an older data set is rebuilt. */
const GENERATOR_VERSION = 5;
/** Timestamps are anchored, not `now()`, so every run builds the same rows. */
const ANCHOR = '2026-11-01T00:00:00Z';

// Log-normal per-user feed sizes: median 60 (μ = ln 60), p99 500 (μ + 2.326σ = ln 500).
const MU = Math.log(60);
const SIGMA = Math.log(500 / 60) / 2.326;

/** Per-mille weights of the catalog's types: tasks and deals are frequent, skip trace rare. */
// A word list, kept dense.
// prettier-ignore
const TYPE_WEIGHTS: [string, number][] = [
  ['task_due_soon', 150], ['task_assigned', 120], ['deal_stage_changed', 110], ['reply_received', 100],
  ['note_mention', 90], ['contact_assigned', 80], ['task_overdue', 70], ['deal_assigned', 60],
  ['contact_created', 55], ['call_missed', 50], ['deal_created', 45], ['task_completed', 35],
  ['call_voicemail', 25], ['skip_trace_completed', 10],
];

// A word list, kept dense.
// prettier-ignore
export const FIRST_NAMES = ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth', 'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen', 'Christopher', 'Lisa', 'Daniel', 'Nancy', 'Matthew', 'Betty', 'Anthony', 'Margaret', 'Mark', 'Sandra', 'Donald', 'Ashley', 'Steven', 'Kimberly', 'Paul', 'Emily', 'Andrew', 'Donna', 'Joshua', 'Michelle', 'Kenneth', 'Carol', 'Kevin', 'Amanda', 'Brian', 'Dorothy', 'George', 'Melissa', 'Timothy', 'Deborah'];
// A word list, kept dense.
// prettier-ignore
export const SURNAMES = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez', 'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee', 'Perez', 'Thompson', 'White', 'Harris', 'Sanchez', 'Clark', 'Ramirez', 'Lewis', 'Robinson', 'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Torres', 'Nguyen', 'Hill', 'Flores', 'Green', 'Adams', 'Nelson', 'Baker', 'Hall', 'Rivera', 'Campbell', 'Mitchell', 'Carter', 'Roberts', 'Gomez', 'Phillips', 'Evans', 'Turner', 'Diaz', 'Parker', 'Cruz', 'Edwards', 'Collins', 'Reyes', 'Stewart', 'Morris', 'Morales', 'Murphy', 'Cook', 'Rogers', 'Gutierrez', 'Ortiz', 'Morgan', 'Cooper', 'Peterson', 'Bailey', 'Reed', 'Kelly', 'Howard', 'Ramos', 'Kim', 'Cox', 'Ward', 'Richardson', 'Watson', 'Brooks', 'Chavez', 'Wood', 'James', 'Bennett', 'Gray', 'Mendoza', 'Ruiz', 'Hughes', 'Price', 'Alvarez', 'Castillo', 'Sanders', 'Patel', 'Myers', 'Long', 'Ross', 'Foster', 'Jimenez'];
// A word list, kept dense.
// prettier-ignore
const STREETS = ['Oak', 'Maple', 'Cedar', 'Pine', 'Elm', 'Walnut', 'Willow', 'Birch', 'Hickory', 'Magnolia', 'Sycamore', 'Chestnut', 'Dogwood', 'Laurel', 'Juniper', 'Aspen', 'Cypress', 'Poplar', 'Spruce', 'Hawthorn', 'Lincoln', 'Washington', 'Jefferson', 'Madison', 'Franklin', 'Jackson', 'Adams', 'Monroe', 'Hamilton', 'Grant', 'Park', 'Lake', 'Hill', 'River', 'Spring', 'Meadow', 'Forest', 'Valley', 'Ridge', 'Sunset', 'Highland', 'Prairie', 'Canyon', 'Mesa', 'Harbor', 'Bay', 'Summit', 'Orchard', 'Mill', 'Church', 'School', 'Market', 'Bridge', 'Station', 'Union', 'Liberty', 'Victory', 'Heritage', 'Colonial', 'Pioneer'];
const SUFFIXES = ['Street', 'Avenue', 'Road', 'Lane', 'Drive', 'Boulevard', 'Court', 'Way', 'Place', 'Terrace'];
// A word list, kept dense.
// prettier-ignore
const CITIES: [string, string, string][] = [
  ['Austin', 'TX', '787'], ['Dallas', 'TX', '752'], ['Houston', 'TX', '770'], ['San Antonio', 'TX', '782'], ['Phoenix', 'AZ', '850'],
  ['Denver', 'CO', '802'], ['Atlanta', 'GA', '303'], ['Miami', 'FL', '331'], ['Orlando', 'FL', '328'], ['Tampa', 'FL', '336'],
  ['Charlotte', 'NC', '282'], ['Raleigh', 'NC', '276'], ['Nashville', 'TN', '372'], ['Columbus', 'OH', '432'], ['Indianapolis', 'IN', '462'],
  ['Kansas City', 'MO', '641'], ['Las Vegas', 'NV', '891'], ['Sacramento', 'CA', '958'], ['Portland', 'OR', '972'], ['Seattle', 'WA', '981'],
];
const ENTITY_WORDS = ['Acme', 'Summit', 'Keystone', 'Blue Ridge', 'Lone Star', 'Evergreen', 'Pinnacle', 'Harbor', 'Granite', 'Silver Oak'];
const ENTITY_SUFFIXES = ['Holdings, L.L.C.', 'Properties LLC', 'Realty Inc.', 'Investments Corp', 'Capital Co'];

export interface GenerationReport {
  generated: boolean;
  seconds: number;
  rows: Record<string, number>;
}

/** Per-user feed sizes: log-normal, scaled to the exact total, user 0 is the heavy user. */
export function feedSizes(scale: Scale, seed: number): number[] {
  const random = prng(seed);
  const typical = Array.from({ length: scale.users - 1 }, () => Math.max(1, Math.round(Math.exp(MU + SIGMA * normal(random)))));
  const target = scale.notifications - scale.heavyUserNotifications;
  const factor = target / typical.reduce((a, b) => a + b, 0);
  const sizes = typical.map((n) => Math.max(1, Math.round(n * factor)));
  let diff = target - sizes.reduce((a, b) => a + b, 0);
  for (let i = 0; diff !== 0; i = (i + 1) % sizes.length) {
    if (diff > 0) {
      sizes[i]++;
      diff--;
    } else if (sizes[i] > 1) {
      sizes[i]--;
      diff++;
    }
  }
  return [scale.heavyUserNotifications, ...sizes];
}

const userId = (seed: number, i: number) => seededUuid(seed, 'user', i);
export const gatewaySecret = (seed: number, user: number, key = 0) => benchSecret('gk_', seed, `user${user}:${key}`);
export const skipTraceSecret = (seed: number, org: number) => benchSecret('stk_', seed, `org${org}`);

/** A raw street address as a caller would type it, and its property key (the trace cache key without actor). */
export interface RawAddress {
  line1: string;
  city: string;
  state: string;
  zip: string;
}

function propertyAddresses(scale: Scale, seed: number): { raw: RawAddress; key: string; std: ReturnType<typeof standardizeAddress> }[] {
  const random = prng(seed ^ 0x5eed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)];
  const seen = new Set<string>();
  const out: { raw: RawAddress; key: string; std: ReturnType<typeof standardizeAddress> }[] = [];
  while (out.length < scale.properties) {
    const [city, state, zip3] = pick(CITIES);
    const unit = random() < 0.2 ? ` Apt ${1 + Math.floor(random() * 40)}` : '';
    const direction = random() < 0.15 ? `${pick(['North', 'South', 'East', 'West'])} ` : '';
    const raw: RawAddress = {
      line1: `${1 + Math.floor(random() * 9999)} ${direction}${pick(STREETS)} ${pick(SUFFIXES)}${unit}`,
      city,
      state,
      zip: `${zip3}${String(Math.floor(random() * 100)).padStart(2, '0')}`,
    };
    const std = standardizeAddress(raw);
    const key = addressKey(std);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ raw, key, std });
  }
  return out;
}

async function scalar<T>(client: pg.Client, sql: string, params: unknown[] = []): Promise<T> {
  const { rows } = await client.query(sql, params);
  return Object.values(rows[0] ?? {})[0] as T;
}

/** Generates the data set unless the database already holds this exact one (same scale, seed and generator). */
export async function ensureData(url: string, scale: Scale, seed: number, options: { force?: boolean } = {}): Promise<GenerationReport> {
  const started = performance.now();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`create schema if not exists bench_meta`);
    await client.query(
      `create table if not exists bench_meta.info (id int primary key default 1, signature text not null, generated_at timestamptz not null default now(), seconds numeric)`,
    );
    const signature = JSON.stringify({ v: GENERATOR_VERSION, seed, scale });
    const existing = await client.query<{ signature: string }>(`select signature from bench_meta.info where id = 1`);
    if (!options.force && existing.rows[0]?.signature === signature) {
      return { generated: false, seconds: (performance.now() - started) / 1000, rows: await rowCounts(client) };
    }
    await generate(client, url, scale, seed);
    const seconds = (performance.now() - started) / 1000;
    await client.query(
      `insert into bench_meta.info (id, signature, seconds) values (1, $1, $2) on conflict (id) do update set signature = excluded.signature, generated_at = now(), seconds = excluded.seconds`,
      [signature, seconds],
    );
    return { generated: true, seconds, rows: await rowCounts(client) };
  } finally {
    await client.end();
  }
}

/**
 * Puts the heavy user's (user 0's) read state back as `generate` made it, from the same hashes
 * (row g's id from md5(seed, 'n', 0, g), its read state and seenAt from md5(seed, 'r', 0, g)):
 * the markAll scenario flips the whole feed, by rewriting rows (before the read marks) or by
 * adding read marks (since). Only rows that differ are written; the user's read marks are deleted
 * and its counter rows recounted from the rows (their `mark_gen` kept, so a later mark-all's number
 * is still above every row's). On a database of a tree before the read marks, only the rows.
 */
export async function restoreHeavyUserReadState(client: pg.Client, scale: Scale, seed: number): Promise<number> {
  const user = userId(seed, 0);
  const marks = (await scalar<string | null>(client, `select to_regclass('notification_read_marks')::text`)) !== null;
  // A writer of the user's rows like any other: the service's user lock first (src/notifications/feed.data.ts), or it
  // could deadlock with a mark of everything still running.
  await client.query('begin');
  try {
    await client.query(`select pg_advisory_xact_lock(${0x6e6f7466}, hashtext($1::text))`, [user]);
    if (marks) await client.query(`delete from notification_read_marks where user_id = $1`, [user]);
    const result = await client.query(
      `update notifications n
          set is_seen = g.seen, seen_at = case when g.seen then n.created_at + make_interval(secs => (g.h2 / 3) % 86400) end
         from (select md5(concat_ws(':', $1::int, 'n', 0, i))::uuid as id, bench_meta.h(m, 2) % 3 = 0 as seen, bench_meta.h(m, 2) as h2
                 from generate_series(1, $2::int) i, md5(concat_ws(':', $1::int, 'r', 0, i)) as m) g
        where n.id = g.id and n.user_id = $3::uuid
          and (n.is_seen, n.seen_at) is distinct from (g.seen, case when g.seen then n.created_at + make_interval(secs => (g.h2 / 3) % 86400) end)`,
      [seed, feedSizes(scale, seed)[0], user],
    );
    // Deleting the marks changed rows' states under the counters: they are counted again.
    if (marks)
      await client.query(
        `update notification_counters c set unread_count = coalesce(x.unread, 0), read_count = coalesce(x.read, 0)
           from notification_counters c2 left join (
             select notification_type, count(*) filter (where not is_seen) as unread, count(*) filter (where is_seen) as read
               from notifications where user_id = $1 and archived_at is null group by notification_type) x
             on x.notification_type = c2.notification_type
          where c.user_id = $1 and c2.user_id = $1 and c2.notification_type = c.notification_type`,
        [user],
      );
    await client.query('commit');
    return result.rowCount ?? 0;
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

async function rowCounts(client: pg.Client): Promise<Record<string, number>> {
  const tables = [
    'organizations',
    'users',
    'api_keys',
    'notifications',
    'notification_counters',
    'properties',
    'property_owners',
    'property_persons',
    'skip_trace_results',
  ];
  const counts: Record<string, number> = {};
  for (const table of tables) counts[table] = Number(await scalar<string>(client, `select count(*) from ${table}`));
  return counts;
}

async function generate(client: pg.Client, url: string, scale: Scale, seed: number) {
  const step = async (label: string, work: () => Promise<unknown>) => {
    const t = performance.now();
    await work();
    log(`  ${label}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  };
  log(`generating the ${scale.name} data set (seed ${seed})`);
  await client.query(`set session_replication_role = replica`); // no triggers, no FK checks during bulk loads
  await client.query(`set maintenance_work_mem = '512MB'`);
  await client.query(`set synchronous_commit = off`);

  await step('clear', () =>
    client.query(`truncate organizations, users, api_keys, notifications, notification_counters, properties, property_owners,
      property_persons, skip_trace_keys, skip_trace_credit_ledger, skip_trace_results, skip_trace_requests cascade`),
  );
  await client.query(`drop table if exists bench_meta.trace_inputs`);
  await client.query(
    `create table bench_meta.trace_inputs (address_key text primary key, cache_key text not null, line1 text, city text, state text, zip text)`,
  );

  // Hash-derived pseudo-random integers: the i-th 32-bit slice of an md5, non-negative.
  await client.query(`create or replace function bench_meta.h(m text, i int) returns int language sql immutable parallel safe
    as $$ select (('x' || substr(m, i * 8 + 1, 8))::bit(32)::int & 2147483647) $$`);

  await step(`${scale.organizations} organizations, ${scale.users} users, keys`, async () => {
    await client.query(
      `insert into organizations (id, name, skip_trace_enabled, skip_trace_credits)
       select md5(concat_ws(':', $1::int, 'org', i))::uuid, 'Bench Realty ' || i, true, 1000000000 from generate_series(0, $2::int - 1) i`,
      [seed, scale.organizations],
    );
    await client.query(
      `insert into users (id, organization_id, email, name, role)
       select md5(concat_ws(':', $1::int, 'user', i))::uuid, md5(concat_ws(':', $1::int, 'org', i % $3::int))::uuid,
              'agent' || i || '@bench.test', 'Agent ' || i, case when i < $3::int then 'ADMIN' else 'MEMBER' end
       from generate_series(0, $2::int - 1) i`,
      [seed, scale.users, scale.organizations],
    );
    const keyUsers: number[] = [];
    const keyIndexes: number[] = [];
    for (let u = 0; u < scale.users; u++) {
      keyUsers.push(u);
      keyIndexes.push(0);
    }
    for (let k = 1; k < scale.heavyUserKeys; k++) {
      keyUsers.push(0);
      keyIndexes.push(k);
    }
    const hashes = keyUsers.map((u, i) => sha256Hex(gatewaySecret(seed, u, keyIndexes[i])));
    await client.query(
      `insert into api_keys (id, user_id, key_hash, hint, scopes)
       select md5(concat_ws(':', $1::int, 'key', u, k))::uuid, md5(concat_ws(':', $1::int, 'user', u))::uuid, h, 'gk_bench…', '{READ,WRITE}'
       from unnest($2::int[], $3::int[], $4::text[]) as t(u, k, h)`,
      [seed, keyUsers, keyIndexes, hashes],
    );
    const orgs = Array.from({ length: scale.organizations }, (_, i) => i);
    await client.query(
      `insert into skip_trace_keys (id, organization_id, key_hash, hint)
       select md5(concat_ws(':', $1::int, 'stk', o))::uuid, md5(concat_ws(':', $1::int, 'org', o))::uuid, h, 'stk_benc…'
       from unnest($2::int[], $3::text[]) as t(o, h)`,
      [seed, orgs, orgs.map((o) => sha256Hex(skipTraceSecret(seed, o)))],
    );
  });

  // Secondary indexes are rebuilt after the load from their own definitions (faster than maintaining them row by row).
  const indexes = await client.query<{ name: string; def: string }>(
    `select indexname as name, indexdef as def from pg_indexes
      where schemaname = 'public' and tablename = 'notifications' and indexname <> 'notifications_pkey'`,
  );
  for (const index of indexes.rows) await client.query(`drop index ${index.name}`);

  const type1000 = TYPE_WEIGHTS.flatMap(([type, weight]) => Array<string>(weight).fill(type));
  const sizes = feedSizes(scale, seed);
  await step(`${scale.notifications.toLocaleString('en-US')} notifications`, async () => {
    const BATCH_USERS = 1000;
    for (let start = 0; start < sizes.length; start += BATCH_USERS) {
      const idx = sizes.slice(start, start + BATCH_USERS).map((_, i) => start + i);
      await client.query(
        `insert into notifications (id, user_id, notification_type, is_seen, title, body, created_at, seen_at,
           contact_id, deal_id, note_id, reply_id, task_id, call_id, action_type, action_target_id)
         select id, user_id, type, seen,
                initcap(replace(type, '_', ' ')) || ': ' || ($4::text[])[1 + h3 % 50] || ' ' || ($5::text[])[1 + (h3 / 50) % 100],
                'About ' || (1 + h4 % 9999) || ' ' || ($6::text[])[1 + (h3 / 5000) % 60] || ' — follow up with '
                  || ($5::text[])[1 + (h4 / 10000) % 100] || ' (ref ' || (h2 % 100000) || ')',
                created_at, case when seen then created_at + make_interval(secs => (h2 / 3) % 86400) end,
                case when type like 'contact%' or type like 'call%' then 'ct_' || (h4 % 100000) end,
                case when type like 'deal%' then 'dl_' || (h4 % 100000) end,
                case when type = 'note_mention' then 'nt_' || (h4 % 100000) end,
                case when type = 'reply_received' then 'rp_' || (h4 % 100000) end,
                case when type like 'task%' then 'tk_' || (h4 % 100000) end,
                case when type like 'call%' then 'cl_' || (h4 % 100000) end,
                'open_' || split_part(type, '_', 1), split_part(type, '_', 1) || '_' || (h4 % 100000)
         from (
           select md5(concat_ws(':', $1::int, 'n', u.idx, g))::uuid as id, u.user_id,
                  ($7::text[])[1 + bench_meta.h(m, 0) % 1000] as type,
                  bench_meta.h(m, 2) % 3 = 0 as seen,
                  $8::timestamptz - make_interval(secs => bench_meta.h(m, 1) % 31536000 + (bench_meta.h(m, 2) / 7 % 1000) / 1000.0) as created_at,
                  bench_meta.h(m, 2) as h2, bench_meta.h(m, 3) as h3, bench_meta.h(md5(m), 0) as h4
           from unnest($2::uuid[], $3::int[], $9::int[]) as u(user_id, n, idx),
                generate_series(1, u.n) as g,
                md5(concat_ws(':', $1::int, 'r', u.idx, g)) as m
         ) rows`,
        [seed, idx.map((i) => userId(seed, i)), idx.map((i) => sizes[i]), FIRST_NAMES, SURNAMES, STREETS, type1000, ANCHOR, idx],
      );
    }
  });

  await step('notification indexes (two at a time)', async () => {
    const second = new pg.Client({ connectionString: url });
    await second.connect();
    try {
      await second.query(`set maintenance_work_mem = '512MB'`);
      // The GIN trigram builds are the slow ones: one per connection.
      const queues: string[][] = [[], []];
      const sorted = [...indexes.rows].sort((a, b) => Number(b.def.includes('gin')) - Number(a.def.includes('gin')));
      for (const [i, index] of sorted.entries()) queues[i % 2].push(index.def);
      await Promise.all(
        [client, second].map(async (c, i) => {
          for (const def of queues[i]) await c.query(def);
        }),
      );
    } finally {
      await second.end();
    }
  });

  await step('notification counters', () =>
    client.query(`insert into notification_counters (user_id, notification_type, unread_count, read_count)
      select user_id, notification_type, count(*) filter (where not is_seen), count(*) filter (where is_seen)
      from notifications group by user_id, notification_type`),
  );

  const addresses = propertyAddresses(scale, seed);
  await step(`${scale.properties.toLocaleString('en-US')} properties with owners and persons`, async () => {
    const BATCH = 10_000;
    for (let start = 0; start < addresses.length; start += BATCH) {
      const batch = addresses.slice(start, start + BATCH);
      await client.query(
        `insert into properties (id, address_key, line1, city, state, zip5)
         select md5(concat_ws(':', $1::int, 'p', k))::uuid, k, l, c, s, z from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) as t(k, l, c, s, z)`,
        [
          seed,
          batch.map((a) => a.key),
          batch.map((a) => a.std.line1),
          batch.map((a) => a.std.city),
          batch.map((a) => a.std.state),
          batch.map((a) => a.std.zip5),
        ],
      );
    }
    // One or two owners per property; a fifth of them entities with one or two persons.
    const entityNames = ENTITY_WORDS.flatMap((w) => ENTITY_SUFFIXES.map((s) => `${w} ${s}`));
    await client.query(
      `insert into property_owners (id, property_id, position, type, name, name_key)
       select md5(p.id::text || ':o:' || k)::uuid, p.id, k - 1, case when e then 'entity' else 'person' end,
              case when e then ($1::text[])[1 + h % 50] end, case when e then ($2::text[])[1 + h % 50] end
       from properties p, md5(p.id::text) as m, bench_meta.h(m, 0) as h,
            generate_series(1, 1 + h % 2) as k, lateral (select bench_meta.h(m, k) % 5 = 0 as e) x`,
      [entityNames, entityNames.map(normalizeEntityName)],
    );
    await client.query(
      `insert into property_persons (id, owner_id, position, first_name, last_name, middle_name, first_key, last_key, age, phones, emails)
       select md5(o.id::text || ':p:' || k)::uuid, o.id, k - 1, ($1::text[])[1 + h % 50], ($2::text[])[1 + (h / 50) % 100],
              case when h % 3 = 0 then ($1::text[])[1 + (h / 7) % 50] end,
              ($3::text[])[1 + h % 50], ($4::text[])[1 + (h / 50) % 100], 25 + h % 60,
              jsonb_build_array(jsonb_build_object('number', '5' || lpad((h % 1000000000)::text, 9, '0'), 'type', (array['mobile','residential','unknown'])[1 + h % 3])),
              jsonb_build_array(lower(($1::text[])[1 + h % 50] || '.' || ($2::text[])[1 + (h / 50) % 100]) || (h % 1000) || '@example.com')
       from property_owners o, bench_meta.h(md5(o.id::text), 0) as n,
            generate_series(1, case when o.type = 'entity' then 1 + n % 2 else 1 end) as k,
            bench_meta.h(md5(o.id::text || ':' || k), 0) as h`,
      [FIRST_NAMES, SURNAMES, FIRST_NAMES.map(normalizePersonNamePart), SURNAMES.map(normalizePersonNamePart)],
    );
  });

  await step(`${scale.cachedTraces} cached trace results`, async () => {
    const cached = addresses.slice(0, scale.cachedTraces);
    await client.query(
      `insert into bench_meta.trace_inputs (address_key, cache_key, line1, city, state, zip)
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
      [
        cached.map((a) => a.key),
        // The key the service looks a trace up by (no actor, as the scenario asks).
        cached.map((a) => traceCacheKey(a.std, normalizeActor(null))),
        cached.map((a) => a.raw.line1),
        cached.map((a) => a.raw.city),
        cached.map((a) => a.raw.state),
        cached.map((a) => a.raw.zip),
      ],
    );
    // What the records provider would have cached: every person of every owner, in order.
    await client.query(
      `insert into skip_trace_results (cache_key, status, persons, provider, created_at, expires_at)
       select t.cache_key, case when count(pp.id) > 0 then 'records_found' else 'no_records_found' end,
              coalesce(jsonb_agg(jsonb_build_object('firstName', pp.first_name, 'lastName', pp.last_name, 'middleName', pp.middle_name,
                'age', pp.age, 'phones', pp.phones, 'emails', pp.emails) order by o.position, pp.position) filter (where pp.id is not null), '[]'),
              'records', now(), now() + interval '3650 days'
       from bench_meta.trace_inputs t join properties p on p.address_key = t.address_key
       left join property_owners o on o.property_id = p.id left join property_persons pp on pp.owner_id = o.id
       group by t.cache_key`,
    );
  });

  await client.query(`set session_replication_role = origin`);
  await step('vacuum analyze', () => client.query(`vacuum analyze`));
  await client.query(`checkpoint`);
}

// CLI
if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.env.BENCH_DATABASE_URL;
  if (!url) {
    console.error('Set BENCH_DATABASE_URL (a dedicated database whose schema the service has migrated).');
    process.exit(1);
  }
  const scale = process.argv.includes('--quick') ? QUICK : FULL;
  ensureData(url, scale, DEFAULT_SEED, { force: process.argv.includes('--force') }).then(
    (report) => console.log(JSON.stringify(report, null, 2)),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
