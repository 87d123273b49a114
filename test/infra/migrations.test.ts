import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from '../../src/infra/database/entities.js';
import { openDatabase } from '../../src/infra/database/orm.js';
import { sql } from '../../src/infra/database/sql.js';
import { migrationsList } from '../../migrations/index.js';

/** Runs `use` against a fresh PostgreSQL database (its URL), dropped afterwards. */
async function withFreshDatabase(prefix: string, use: (url: string) => Promise<void>) {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await admin.query(`create database ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  try {
    await use(url.toString());
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

describe('migrations', () => {
  it('run once on a fresh embedded database, and not again on reopen', async () => {
    const db = await openDatabase({ kind: 'embedded', dataDir: 'memory://' });
    try {
      expect(db.freshEmbedded).toBe(true);
      const executed = await db.orm.migrator.getExecuted();
      expect(executed.map((m) => m.name)).toEqual(migrationsList.map((m) => m.name));
      expect(await db.orm.migrator.getPending()).toEqual([]);
    } finally {
      await db.close();
    }
  });

  // A data dir written by an older version (fewer migrations) is brought up to date when it is
  // reopened; once up to date, a reopen runs nothing and never loads the migrator (start-up).
  it('upgrade an embedded data dir created by an older migration set, then leave it alone', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'migrations-upgrade-'));
    const older = migrationsList[migrationsList.length - 3].name;
    const executedNames = async (db: Awaited<ReturnType<typeof openDatabase>>) =>
      (await db.sql.rows<{ name: string }>(sql`select name from mikro_orm_migrations order by id`)).map((row) => row.name);
    const migratorLoaded = (db: Awaited<ReturnType<typeof openDatabase>>) =>
      db.orm.config.getExtension('@mikro-orm/migrator') !== undefined;
    try {
      const old = await openDatabase({ kind: 'embedded', dataDir }, undefined, undefined, { migrateTo: older });
      expect(await executedNames(old)).toEqual(migrationsList.slice(0, -2).map((m) => m.name));
      await old.close();

      const upgraded = await openDatabase({ kind: 'embedded', dataDir });
      try {
        expect(upgraded.freshEmbedded).toBe(false);
        expect(migratorLoaded(upgraded)).toBe(true);
        expect(await executedNames(upgraded)).toEqual(migrationsList.map((m) => m.name));
      } finally {
        await upgraded.close();
      }

      const reopened = await openDatabase({ kind: 'embedded', dataDir });
      try {
        expect(reopened.freshEmbedded).toBe(false);
        expect(migratorLoaded(reopened)).toBe(false);
        expect(await executedNames(reopened)).toEqual(migrationsList.map((m) => m.name));
      } finally {
        await reopened.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // An up-to-date database opens without waiting for the migration lock (one query), while one
  // with a migration pending waits for it, so two instances never migrate at once.
  it.skipIf(!process.env.DATABASE_URL)('take the migration lock only when a migration is pending', async () => {
    await withFreshDatabase('migrate_lock', async (url) => {
      await (await openDatabase({ kind: 'postgres', url, poolMax: 2 })).close();
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        // Held as the service holds it: in a transaction, so that it holds through a pooler in transaction mode too.
        const holdLock = async () => {
          await holder.query('begin');
          await holder.query('select pg_advisory_xact_lock(724513901)');
        };
        await holdLock();
        const db = await openDatabase({ kind: 'postgres', url, poolMax: 2 });
        expect(db.orm.config.getExtension('@mikro-orm/migrator')).toBeUndefined();
        await db.close();
        await holder.query('commit');

        // The last migration (written to run again harmlessly) pending again: this open waits for the lock.
        await holder.query(`delete from mikro_orm_migrations where name = $1`, [migrationsList[migrationsList.length - 1].name]);
        await holdLock();
        let opened = false;
        const pending = openDatabase({ kind: 'postgres', url, poolMax: 2 }).then((opening) => ((opened = true), opening));
        await new Promise((resolve) => setTimeout(resolve, 1000));
        expect(opened).toBe(false);
        await holder.query('commit');
        const migrated = await pending;
        try {
          const names = await migrated.sql.rows<{ name: string }>(sql`select name from mikro_orm_migrations order by name`);
          expect(names.map((row) => row.name)).toEqual(migrationsList.map((m) => m.name).sort());
        } finally {
          await migrated.close();
        }
      } finally {
        await holder.end();
      }
    });
  });

  // Instances starting together against one PostgreSQL must not race each other's migrations.
  it.skipIf(!process.env.DATABASE_URL)('serialize when several instances start at once on a fresh PostgreSQL database', async () => {
    await withFreshDatabase('migrate_race', async (url) => {
      const dbs = await Promise.all([1, 2, 3].map(() => openDatabase({ kind: 'postgres', url, poolMax: 2 })));
      const executed = await dbs[0].orm.migrator.getExecuted();
      expect(executed.map((m) => m.name)).toEqual(migrationsList.map((m) => m.name));
      await Promise.all(dbs.map((db) => db.close()));
    });
  });

  // Keys issued before issuers were recorded, and demoted users' keys that still hold ADMIN.
  it.skipIf(!process.env.DATABASE_URL)(
    'key_issuers leaves legacy issuers null and removes ADMIN from keys of users who are no longer ADMIN',
    async () => {
      await withFreshDatabase('migrate_keys', async (url) => {
        const orm = await MikroORM.init({
          entities,
          extensions: [Migrator],
          migrations: { migrationsList, snapshot: false },
          clientUrl: url,
          allowGlobalContext: true,
        });
        try {
          await orm.migrator.up({ to: 'Migration20261123000200_skip_trace' });
          const em = orm.em.fork();
          const org = '00000000-0000-4000-8000-000000000001';
          await em.execute(`insert into organizations (id, name) values (?, 'Legacy')`, [org]);
          await em.execute(
            `insert into users (id, organization_id, email, role) values
        ('00000000-0000-4000-8000-0000000000a1', ?, 'admin@x.test', 'ADMIN'),
        ('00000000-0000-4000-8000-0000000000a2', ?, 'demoted@x.test', 'MEMBER')`,
            [org, org],
          );
          await em.execute(`insert into api_keys (id, user_id, key_hash, hint, scopes) values
        ('00000000-0000-4000-8000-0000000000b1', '00000000-0000-4000-8000-0000000000a1', 'h1', 'x', '{ADMIN,READ}'),
        ('00000000-0000-4000-8000-0000000000b2', '00000000-0000-4000-8000-0000000000a2', 'h2', 'x', '{ADMIN,READ}'),
        ('00000000-0000-4000-8000-0000000000b3', '00000000-0000-4000-8000-0000000000a2', 'h3', 'x', '{ADMIN}')`);
          await em.execute(
            `insert into skip_trace_keys (id, organization_id, key_hash, hint) values ('00000000-0000-4000-8000-0000000000c1', ?, 'h4', 'x')`,
            [org],
          );

          await orm.migrator.up();
          const keys = await em.execute(`select id, scopes, revoked_at is not null as revoked, created_by from api_keys order by id`);
          expect(keys.map((k: any) => ({ ...k, scopes: [...k.scopes] }))).toEqual([
            { id: '00000000-0000-4000-8000-0000000000b1', scopes: ['ADMIN', 'READ'], revoked: false, created_by: null },
            { id: '00000000-0000-4000-8000-0000000000b2', scopes: ['READ'], revoked: false, created_by: null },
            { id: '00000000-0000-4000-8000-0000000000b3', scopes: [], revoked: true, created_by: null },
          ]);
          expect(await em.execute(`select created_by from skip_trace_keys`)).toEqual([{ created_by: null }]);
        } finally {
          await orm.close(true);
        }
      });
    },
  );
});
