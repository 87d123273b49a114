import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/infra/database/orm.js';
import { migrationsList } from '../../migrations/index.js';

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

  // Instances starting together against one PostgreSQL must not race each other's migrations.
  it.skipIf(!process.env.DATABASE_URL)('serialize when several instances start at once on a fresh PostgreSQL database', async () => {
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const name = `migrate_race_${randomBytes(4).toString('hex')}`;
    await admin.query(`create database ${name}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    try {
      const dbs = await Promise.all([1, 2, 3].map(() => openDatabase({ kind: 'postgres', url: url.toString(), poolMax: 2 })));
      const executed = await dbs[0].orm.migrator.getExecuted();
      expect(executed.map((m) => m.name)).toEqual(migrationsList.map((m) => m.name));
      await Promise.all(dbs.map((db) => db.close()));
    } finally {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});
