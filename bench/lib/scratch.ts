/** A scratch database for the scripts that measure one thing on data of their own (`pg-share.ts`, `sweep-cost.ts`). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../../src/infra/database/orm.js';
import { DEFAULT_SEED, ensureData, QUICK } from '../generate-data.js';
import { withDatabase } from './common.js';

/**
 * Creates a database named `<prefix>_<random>` on DATABASE_URL's server, migrates it, fills it with
 * the bench's generator at the quick scale, runs `work` on its URL and drops it, whatever happens.
 */
export async function withScratchDatabase<T>(prefix: string, work: (url: string) => Promise<T>): Promise<T> {
  const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = withDatabase(baseUrl, database);
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${database}`);
  try {
    await (await openDatabase({ kind: 'postgres', url, poolMax: 1 })).close();
    await ensureData(url, QUICK, DEFAULT_SEED);
    return await work(url);
  } finally {
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  }
}
