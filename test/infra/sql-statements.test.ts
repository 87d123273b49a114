/**
 * Statements written with the `sql` tag (src/infra/database/sql.ts): fragments from separate
 * functions carry their own values, so composing them never misnumbers a parameter, on either
 * database (PostgreSQL over the pool, PGlite through the ORM).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { empty, join, sql } from '../../src/infra/database/sql.js';
import { startService, type TestService } from '../support/harness.js';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service.close());

const db = () => service.app.services.sql;

/** Two fragments as two modules would write them, each with its own values. */
const wordsAbove = (floor: number) => sql`select w, n from (values ('a?', 1), ('b', 2), ('c', 3)) as t(w, n) where n > ${floor}`;
const onlyWords = (words: string[] | null) => (words ? sql`and w = any(${words}::text[])` : empty);

describe('the sql tag', () => {
  it('composes fragments, each with its own values, in order', async () => {
    const rows = await db().rows<{ w: string; n: number }>(
      sql`with above as (${wordsAbove(1)}) select w, n from above where true ${onlyWords(['b', 'c'])} and n < ${3} order by n`,
    );
    expect(rows).toEqual([{ w: 'b', n: 2 }]);
  });

  it('keeps a question mark inside a literal out of the parameters', async () => {
    const rows = await db().rows<{ w: string }>(sql`select w from (${wordsAbove(0)}) t where w like ${'a%'}`);
    expect(rows).toEqual([{ w: 'a?' }]);
  });

  it('joins lists of fragments, and counts the rows a statement changed', async () => {
    await db().run(sql`create temporary table if not exists tag_probe (n int)`);
    const changed = await db().run(sql`insert into tag_probe (n) values ${join([1, 2, 3].map((n) => sql`(${n})`))}`);
    expect(changed).toBe(3);
    expect(await db().run(sql`delete from tag_probe where n = any(${[1, 2, 3]}::int[])`)).toBe(3);
  });
});
