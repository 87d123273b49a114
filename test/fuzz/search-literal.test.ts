/**
 * `searchTerm` is a literal, case-insensitive substring (README, Using the gateway): SQL and LIKE
 * metacharacters (`%`, `_`, `\`, `'`, `--`, `;`) match themselves and nothing else.
 *
 * One user gets notifications whose titles are generated from an alphabet heavy in those
 * characters. For generated terms (substrings of the titles, and free strings from the same
 * alphabet), paging through `listNotifications` with the term must return exactly the rows whose
 * title contains it ignoring case: never more, never fewer, and `total` must agree.
 *
 * `FUZZ_SCALE=10 npx vitest run test/fuzz` multiplies every run count.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const TIMEOUT = 120_000 * Math.max(1, SCALE);
const LIMITS = { interruptAfterTimeLimit: 60_000 * Math.max(1, SCALE), markInterruptAsFailure: true };
const RUNS = {
  substrings: Math.max(1, Math.round(150 * SCALE)),
  free: Math.max(1, Math.round(120 * SCALE)),
  graphql: Math.max(1, Math.round(100 * SCALE)),
};
const PARALLEL = 4;
const TITLES = 160;

/**
 * SQL/LIKE metacharacters, quotes, ASCII letters in both cases (the case folding both sides agree
 * on), digits, spaces, and caseless non-ASCII. Never '·', the body of every row, so only titles match.
 */
const ALPHABET = [
  '%',
  '_',
  '\\',
  "'",
  '"',
  '-',
  ';',
  '*',
  '?',
  '[',
  ']',
  '^',
  '$',
  '(',
  ')',
  '.',
  '|',
  '{',
  '}',
  '/',
  '#',
  ' ',
  'a',
  'A',
  'b',
  'B',
  's',
  'S',
  'x',
  'X',
  '0',
  '1',
  '中',
  '😀',
  'ä',
];
const alphabetString = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...ALPHABET), minLength, maxLength });
/** Fragments that make hits on metacharacter runs likely. */
const pieces = fc.constantFrom(
  '%',
  '_',
  '\\',
  '\\\\',
  "'",
  "''",
  '--',
  ';',
  '%_',
  '\\%',
  '\\_',
  "' or '1'='1",
  '; drop table notifications; --',
  '%%',
  '__',
  'a%b',
  'A_B',
  '[a]',
  '.*',
);
const titleArb = fc
  .array(fc.oneof(alphabetString(1, 4), pieces), { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join(''))
  .filter((t) => t.trim().length > 0);

let service: TestService;
let user: Provisioned;
let rows: Array<{ id: string; title: string }> = [];
/** The titles are sampled once per run; FUZZ_SEED=<seed> replays a run's titles. */
const titlesSeed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
let searches = 0;
let matchedTotal = 0;

beforeAll(async () => {
  service = await startService({
    GATEWAY_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_RATE_LIMIT_PER_MIN: '1000000',
    SKIPTRACE_MAX_IN_FLIGHT: '1000',
  });
  user = await service.provision({ scopes: ['READ'] });
  const titles = fc.sample(titleArb, { numRuns: TITLES, seed: titlesSeed });
  const ids = await publish(
    service,
    user.userId,
    titles.map((title) => ({ title, body: '·' })),
  );
  rows = ids.map((id, i) => ({ id, title: titles[i] }));
});
afterAll(async () => {
  console.info(`search fuzz (FUZZ_SEED=${titlesSeed}): ${rows.length} rows, ${searches} searches, ${matchedTotal} matched rows in total`);
  await service?.close();
});

/** Every row of a search, paging with nextCursor. */
async function searchAll(searchTerm: string): Promise<{ ids: string[]; total: number }> {
  const found: string[] = [];
  let cursor: string | null = null;
  let total = -1;
  for (let page = 0; page < 20; page++) {
    const result = await service.call(user.key, {
      operationId: 'listNotifications',
      variables: { searchTerm, limit: 50, ...(cursor ? { cursor } : {}) },
    });
    expect(result.status, `${JSON.stringify(searchTerm)} → ${result.text.slice(0, 300)}`).toBe(200);
    found.push(...result.body.data.notifications.map((n: { id: string }) => n.id));
    total = result.body.data.total;
    cursor = result.body.data.nextCursor;
    if (!cursor) break;
  }
  searches++;
  return { ids: found, total };
}

/** The contract's rule: a case-insensitive substring of title (or body, which never matches here); empty ≡ omitted. */
const expected = (term: string) =>
  rows.filter((row) => term === '' || row.title.toLowerCase().includes(term.toLowerCase())).map((row) => row.id);

async function expectLiteralMatch(terms: string[]) {
  await Promise.all(
    terms.map(async (term) => {
      const { ids, total } = await searchAll(term);
      const want = expected(term);
      matchedTotal += want.length;
      const extra = ids.filter((id) => !want.includes(id)).map((id) => rows.find((r) => r.id === id)?.title);
      const missing = want.filter((id) => !ids.includes(id)).map((id) => rows.find((r) => r.id === id)?.title);
      expect({ term, extra, missing }).toEqual({ term, extra: [], missing: [] });
      expect(ids.length, JSON.stringify(term)).toBe(new Set(ids).size);
      expect(total, JSON.stringify(term)).toBe(want.length);
    }),
  );
}

/** A substring of one of the titles, its case changed at random. */
const substringArb = fc
  .tuple(fc.nat(), fc.nat(), fc.nat({ max: 8 }), fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }))
  .map(([row, start, length, flips]) => {
    const chars = [...rows[row % rows.length].title];
    const from = start % chars.length;
    const slice = chars.slice(from, from + 1 + length);
    return slice.map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join('');
  });

describe('searchTerm matches literally', () => {
  it(
    `substrings of published titles, in any case (${RUNS.substrings * PARALLEL} searches)`,
    async () => {
      await fc.assert(fc.asyncProperty(fc.array(substringArb, { minLength: PARALLEL, maxLength: PARALLEL }), expectLiteralMatch), {
        ...LIMITS,
        numRuns: RUNS.substrings,
      });
    },
    TIMEOUT,
  );

  it(
    `free strings of the same alphabet and metacharacter runs, mostly matching nothing (${RUNS.free * PARALLEL} searches)`,
    async () => {
      const term = fc.oneof(
        alphabetString(1, 6),
        pieces,
        fc.array(pieces, { minLength: 2, maxLength: 3 }).map((p) => p.join('')),
      );
      await fc.assert(fc.asyncProperty(fc.array(term, { minLength: PARALLEL, maxLength: PARALLEL }), expectLiteralMatch), {
        ...LIMITS,
        numRuns: RUNS.free,
      });
    },
    TIMEOUT,
  );

  it(
    `the same through /graphql, with total and hasUnread (${RUNS.graphql} searches)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.oneof(substringArb, pieces), async (term) => {
          const result = await service.graphql(
            `query($q: String) { notifications(searchTerm: $q, limit: 50) { total hasUnread notifications { id } } }`,
            { q: term },
            user.key,
          );
          const want = expected(term);
          expect(result.body.errors, JSON.stringify(term)).toBeUndefined();
          expect(result.body.data.notifications.total, JSON.stringify(term)).toBe(want.length);
          expect(result.body.data.notifications.hasUnread, JSON.stringify(term)).toBe(want.length > 0);
          if (want.length <= 50)
            expect(result.body.data.notifications.notifications.map((n: { id: string }) => n.id).sort()).toEqual([...want].sort());
        }),
        { ...LIMITS, numRuns: RUNS.graphql },
      );
    },
    TIMEOUT,
  );

  it('the empty term is the same as no term', async () => {
    const { ids, total } = await searchAll('');
    expect(total).toBe(rows.length);
    expect(ids.sort()).toEqual(rows.map((r) => r.id).sort());
  });
});
