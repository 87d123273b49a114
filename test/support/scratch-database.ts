import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/infra/database/orm.js';

/**
 * A database of its own migrated up to `migrateTo` (for a test of the next migration on data of
 * the shape before it), and how to get rid of it: on PostgreSQL with DATABASE_URL, else PGlite.
 */
export async function openScratchDatabase(migrateTo: string, prefix: string): Promise<{ db: Database; drop(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const db = await openDatabase({ kind: 'embedded', dataDir: 'memory://' }, undefined, undefined, { migrateTo });
    return { db, drop: () => db.close() };
  }
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  const db = await openDatabase({ kind: 'postgres', url: own.toString(), poolMax: 2 }, undefined, undefined, { migrateTo });
  return {
    db,
    drop: async () => {
      await db.close();
      await admin.query(`drop database ${name} with (force)`);
      await admin.end();
    },
  };
}
