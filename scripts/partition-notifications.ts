/**
 * Rebuilds `notifications` as a table partitioned by `hash (user_id)` into N partitions, or back
 * into a plain table (`--rollback`). An operator runs it explicitly; it is not a migration, so
 * MikroORM never runs it and a fresh database keeps the plain table (docs/scaling.md, "Partitioning
 * `notifications`").
 *
 *   DATABASE_URL=postgres://… npm run partition:notifications -- --partitions 16
 *   DATABASE_URL=postgres://… npm run partition:notifications -- --rollback
 *
 * One transaction, so either everything happened or nothing did:
 *
 *   1. `notifications` is locked in EXCLUSIVE mode: reads (pages, counts) go on, writes (publishes,
 *      marks, a user's deletion) wait until the commit;
 *   2. `notifications_new` is created with the same columns, defaults and checks (`like`),
 *      partitioned by `hash (user_id)` with partitions `notifications_p0` … `p{N-1}`;
 *   3. every row is copied; then the primary key — `(user_id, id)`, since a partitioned table's
 *      unique constraints must include the partition key — and every other index of the old table,
 *      from its own definition, are built on the parent (hence on each partition), the foreign keys
 *      added from their own definitions and the table analyzed;
 *   4. the swap, under ACCESS EXCLUSIVE (readers wait from here to the commit, which is quick): the
 *      triggers (the counters', the read marks' queue) are dropped from the old table, which is renamed `notifications_replaced`
 *      (its indexes `…_replaced`), the new one takes the name `notifications` and its indexes their
 *      old names, and the triggers are created again, from their own definitions, on it. The counter
 *      rows are not touched: the triggers are absent while rows are copied, and the rows are the same.
 *
 * After the commit the command line runs `vacuum (analyze) notifications` (the copied rows have no
 * visibility map yet); it blocks neither reads nor writes.
 *
 * `notifications_replaced` is kept as a frozen copy as of the swap (no triggers; its foreign keys
 * still cascade a user's deletion into it), for comparison; drop it once the new table is checked.
 * The script refuses to run while it exists, when the table already has the asked-for shape, when
 * the service's migrations are not all applied, and on the embedded database (PGlite). It holds the
 * service's migration lock, so an instance starting meanwhile waits before migrating.
 */
import pg from 'pg';
import { MIGRATION_LOCK_ID } from '../src/infra/database/orm.js';
import { migrationsList } from '../migrations/index.js';

export const TABLE = 'notifications';
/** What the old table is renamed to, kept until an operator drops it. */
export const REPLACED = 'notifications_replaced';
const BUILDING = 'notifications_new';
/** Suffix of the old table's indexes once renamed. */
const REPLACED_SUFFIX = '_replaced';

export interface RebuildOptions {
  /** Hash partitions to create; null rebuilds a plain table (the rollback). */
  partitions: number | null;
  /** How long to wait for a lock (the table's, then the swap's) before giving up; PostgreSQL interval syntax. */
  lockTimeout?: string;
  /** For the index builds. */
  maintenanceWorkMem?: string;
  log?: (message: string) => void;
  /**
   * For a test of a later migration on the partitioned shape: partition at the migration before it,
   * then run it. Operators leave it off: the procedure copies the table as the migrations left it.
   */
  allowPendingMigrations?: boolean;
}

export interface RebuildReport {
  partitions: number | null;
  rows: number;
  seconds: number;
  /** Seconds under ACCESS EXCLUSIVE, i.e. readers blocked. */
  swapSeconds: number;
}

export class RefusedError extends Error {}

interface IndexDef {
  name: string;
  def: string;
}

/** The table's shape as it stands: partitioned or not, and what the rebuild needs to copy. */
async function currentShape(client: pg.ClientBase) {
  const table = await client.query<{ relkind: string }>(
    `select c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = current_schema() and c.relname = $1`,
    [TABLE],
  );
  if (table.rowCount === 0) throw new RefusedError(`no table ${TABLE}: run the service's migrations first`);
  const indexes = await client.query<IndexDef & { backs_constraint: boolean }>(
    `select i.relname as name, pg_get_indexdef(i.oid) as def, exists (select 1 from pg_constraint k where k.conindid = i.oid) as backs_constraint
       from pg_index x join pg_class i on i.oid = x.indexrelid where x.indrelid = $1::regclass order by i.relname`,
    [TABLE],
  );
  const constraints = await client.query<{ name: string; def: string; type: string }>(
    `select conname as name, pg_get_constraintdef(oid) as def, contype as type from pg_constraint
      where conrelid = $1::regclass and contype in ('f', 'u', 'x') order by conname`,
    [TABLE],
  );
  const triggers = await client.query<{ name: string; def: string }>(
    `select tgname as name, pg_get_triggerdef(oid) as def from pg_trigger where tgrelid = $1::regclass and not tgisinternal order by tgname`,
    [TABLE],
  );
  const referencing = await client.query<{ name: string }>(
    `select conrelid::regclass::text as name from pg_constraint where confrelid = $1::regclass and contype = 'f'`,
    [TABLE],
  );
  const views = await client.query<{ name: string }>(
    `select distinct v.oid::regclass::text as name from pg_depend d join pg_rewrite r on r.oid = d.objid join pg_class v on v.oid = r.ev_class
      where d.refobjid = $1::regclass and v.oid <> $1::regclass`,
    [TABLE],
  );
  return {
    partitioned: table.rows[0].relkind === 'p',
    indexes: indexes.rows,
    constraints: constraints.rows,
    triggers: triggers.rows,
    blockers: [...referencing.rows.map((r) => `foreign key from ${r.name}`), ...views.rows.map((r) => `view ${r.name}`)],
  };
}

/** An index's definition re-aimed at another table under another name (`ON ONLY` of a partitioned parent dropped). */
export function retarget(index: IndexDef, table: string, name: string): string {
  const pattern = /^CREATE (UNIQUE )?INDEX (\S+) ON (?:ONLY )?(\S+) /;
  const match = pattern.exec(index.def);
  if (!match || match[2] !== index.name) throw new Error(`unexpected index definition: ${index.def}`);
  return index.def.replace(pattern, `CREATE ${match[1] ?? ''}INDEX ${name} ON ${table} `);
}

async function refuseUnlessReady(client: pg.ClientBase, { partitions, allowPendingMigrations }: RebuildOptions) {
  // Inside the rebuild's transaction, where a failed statement would abort it: asks whether the table exists first.
  const [{ present }] = (await client.query<{ present: boolean }>(`select to_regclass('mikro_orm_migrations') is not null as present`))
    .rows;
  const applied = present ? await client.query<{ name: string }>(`select name from mikro_orm_migrations`) : { rows: [] };
  const names = new Set(applied.rows.map((r) => r.name));
  const pending = migrationsList.filter((m) => !names.has(m.name)).map((m) => m.name);
  if (pending.length > 0 && !allowPendingMigrations)
    throw new RefusedError(`migrations not applied yet (${pending.join(', ')}): start the service once first`);
  const kept = await client.query(`select to_regclass($1) as t`, [REPLACED]);
  if (kept.rows[0].t !== null) {
    throw new RefusedError(`${REPLACED} exists (left by an earlier run): check it, drop it (drop table ${REPLACED}), then run again`);
  }
  if (partitions !== null && (!Number.isInteger(partitions) || partitions < 2 || partitions > 1024)) {
    throw new RefusedError(`partitions must be an integer from 2 to 1024, not ${partitions}`);
  }
}

/**
 * Rebuilds `notifications` into the asked-for shape (see the file's comment), in one transaction
 * that holds the migration lock (transaction-level, so it holds behind a pooler in transaction
 * mode too). `client` must not be in a transaction.
 */
export async function rebuildNotifications(client: pg.ClientBase, options: RebuildOptions): Promise<RebuildReport> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const { partitions } = options;
  await client.query('begin');
  try {
    await client.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
    await refuseUnlessReady(client, options);
    await client.query(`set local lock_timeout = '${options.lockTimeout ?? '10s'}'`);
    await client.query(`set local maintenance_work_mem = '${options.maintenanceWorkMem ?? '256MB'}'`);
    await client.query(`lock table ${TABLE} in exclusive mode`);
    const shape = await currentShape(client);
    if (shape.partitioned === (partitions !== null)) {
      throw new RefusedError(partitions !== null ? `${TABLE} is already partitioned` : `${TABLE} is not partitioned: nothing to roll back`);
    }
    if (shape.blockers.length > 0) throw new RefusedError(`${TABLE} is referenced by ${shape.blockers.join(', ')}: not handled`);

    log(partitions !== null ? `creating ${BUILDING} with ${partitions} hash partitions on user_id` : `creating a plain ${BUILDING}`);
    await client.query(
      `create table ${BUILDING} (like ${TABLE} including defaults including constraints including generated including identity
         including storage including compression including comments)${partitions !== null ? ' partition by hash (user_id)' : ''}`,
    );
    for (let i = 0; i < (partitions ?? 0); i++) {
      await client.query(`create table ${TABLE}_p${i} partition of ${BUILDING} for values with (modulus ${partitions}, remainder ${i})`);
    }
    const copied = await client.query(`insert into ${BUILDING} select * from ${TABLE}`);
    const rows = copied.rowCount ?? 0;
    log(`copied ${rows} rows`);

    // The primary key: with partitions it must hold the partition key.
    await client.query(
      `alter table ${BUILDING} add constraint ${BUILDING}_pkey primary key (${partitions !== null ? 'user_id, id' : 'id'})`,
    );
    // Other indexes and constraints under temporary names (index names are unique per schema), renamed at the swap.
    const others = shape.indexes.filter((index) => !index.backs_constraint);
    for (const index of others) {
      log(`index ${index.name}`);
      await client.query(retarget(index, BUILDING, `${index.name}_new`));
    }
    const keyed = shape.constraints.filter((c) => c.type !== 'f');
    for (const constraint of keyed) await client.query(`alter table ${BUILDING} add constraint ${constraint.name}_new ${constraint.def}`);
    for (const constraint of shape.constraints.filter((c) => c.type === 'f')) {
      await client.query(`alter table ${BUILDING} add constraint ${constraint.name} ${constraint.def}`);
    }
    await client.query(`analyze ${BUILDING}`);

    const swapStarted = performance.now();
    log('swapping names');
    await client.query(`lock table ${TABLE} in access exclusive mode`);
    for (const trigger of shape.triggers) await client.query(`drop trigger ${trigger.name} on ${TABLE}`);
    await client.query(`alter table ${TABLE} rename to ${REPLACED}`);
    // Renaming an index that backs a constraint (the primary key, a unique key) renames the constraint too.
    for (const index of shape.indexes) await client.query(`alter index ${index.name} rename to ${index.name}${REPLACED_SUFFIX}`);
    await client.query(`alter table ${BUILDING} rename to ${TABLE}`);
    await client.query(`alter index ${BUILDING}_pkey rename to ${TABLE}_pkey`);
    for (const index of [...others, ...keyed]) await client.query(`alter index ${index.name}_new rename to ${index.name}`);
    for (const trigger of shape.triggers) await client.query(trigger.def);
    await client.query('commit');
    const done = performance.now();
    return { partitions, rows, seconds: (done - started) / 1000, swapSeconds: (done - swapStarted) / 1000 };
  } catch (error) {
    await client.query('rollback');
    throw error;
  }
}

/** The command line: exit code 0 done, 1 failed, 2 refused (nothing changed). */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const url = env.DATABASE_URL;
  if (!url) {
    console.error('Partitioning is not supported on the embedded database (PGlite): set DATABASE_URL to a PostgreSQL server.');
    return 2;
  }
  if (!/^postgres(ql)?:\/\//.test(url)) {
    console.error('DATABASE_URL must be a postgres:// URL: partitioning is for a PostgreSQL server only.');
    return 2;
  }
  const rollback = argv.includes('--rollback');
  const at = argv.indexOf('--partitions');
  const partitions = rollback ? null : Number(at >= 0 ? argv[at + 1] : (env.PARTITIONS ?? 16));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const report = await rebuildNotifications(client, { partitions, log: (m) => console.error(m) });
    // The copied rows have no visibility map yet (no index-only scans) and unset hint bits: vacuum
    // now rather than when autovacuum gets to it. It blocks neither reads nor writes.
    console.error('vacuum (analyze) notifications');
    const vacuumStarted = performance.now();
    await client.query(`vacuum (analyze) ${TABLE}`);
    console.log(JSON.stringify({ ...report, vacuumSeconds: (performance.now() - vacuumStarted) / 1000 }));
    return 0;
  } catch (error) {
    console.error(error instanceof RefusedError ? `refused: ${error.message}` : error);
    return error instanceof RefusedError ? 2 : 1;
  } finally {
    await client.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2), process.env);
}
