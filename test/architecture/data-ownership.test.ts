/**
 * Each domain owns its tables and reaches them only through its own data module; another domain
 * calls that module's (or service's) exported functions. This test reads every SQL text of the
 * `.ts` files under `src/` (string and template literals, so comments and identifiers do not count)
 * and fails when a file names another domain's table after `from`, `join`, `into`, `update` or
 * `delete from`. `migrations/` and `bench/` are outside `src/` and exempt; `src/infra/`,
 * `src/schema/`, `src/common/`, `src/http/`, `src/reference/` and `src/app/` own no table and may name none.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

const OWNERS: Record<string, string> = {
  organizations: 'src/organizations/',
  users: 'src/organizations/',
  api_keys: 'src/auth/',
  notifications: 'src/notifications/',
  notification_types: 'src/notifications/',
  notification_counters: 'src/notifications/',
  skip_trace_keys: 'src/auth/',
  skip_trace_credit_ledger: 'src/billing/',
  skip_trace_requests: 'src/billing/',
  skip_trace_results: 'src/skip-trace/',
  skip_trace_idempotency_keys: 'src/skip-trace/',
  skip_trace_jobs: 'src/skip-trace/',
  skip_trace_job_items: 'src/skip-trace/',
  skip_trace_batch_items: 'src/skip-trace/',
  properties: 'src/property-records/',
  property_owners: 'src/property-records/',
  property_persons: 'src/property-records/',
  webhook_secrets: 'src/webhooks/',
  webhook_deliveries: 'src/webhooks/',
};

/**
 * Columns owned by another domain than their table's: only that domain names them, and it may
 * name the table in a statement that touches nothing else of it (these columns and the key `id`).
 */
const COLUMN_OWNERS: Record<string, { owner: string; columns: string[] }> = {
  organizations: { owner: 'src/billing/', columns: ['skip_trace_enabled', 'skip_trace_credits'] },
};

/** The words such a statement may hold besides the owned columns, `id` and the table itself. */
const PLAIN_STATEMENT_WORDS = new Set([
  'select',
  'from',
  'where',
  'and',
  'or',
  'not',
  'update',
  'set',
  'for',
  'share',
  'returning',
  'is',
  'null',
]);

interface Mention {
  file: string;
  table: string;
}

/**
 * Mentions the rule allows, each with its reason. The gateway key lookup runs on every request:
 * one indexed query joins `api_keys` to the owner's `users` row (role, organization), where
 * asking the organizations domain would add a second round trip to every request.
 */
const EXCEPTIONS: Mention[] = [
  { file: 'src/auth/api-keys.data.ts', table: 'users' },
  // A job's shared charge takes several credits in one update of the balance it owns: the statement
  // names only `skip_trace_credits` of `organizations`, but its CTE aliases defeat the column check.
  { file: 'src/billing/charge.ts', table: 'organizations' },
];

const TABLE_MENTION = /\b(?:from|join|into|update)\s+"?([a-z_][a-z0-9_]*)"?/gi;

/** The text of every string and template literal of a source file; a template's expressions read as `?`. */
function literals(path: string, text: string): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) found.push(node.text);
    else if (ts.isTemplateExpression(node))
      found.push(node.head.text + node.templateSpans.map((span) => ` ? ${span.literal.text}`).join(''));
    node.forEachChild(visit);
  };
  visit(ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true));
  return found;
}

/** Whether a statement naming `table` from its column owner's domain touches only the owned columns. */
function onlyOwnedColumns(statement: string, table: string): boolean {
  const allowed = new Set([table, 'id', ...COLUMN_OWNERS[table].columns]);
  const words = statement.toLowerCase().match(/[a-z_][a-z0-9_]*/g) ?? [];
  return !statement.includes('*') && words.every((word) => allowed.has(word) || PLAIN_STATEMENT_WORDS.has(word));
}

/** Every (file, table) pair where a file names a table, or a column, that its domain does not own. */
function violations(files: { file: string; text: string }[]): Mention[] {
  const out = new Map<string, Mention>();
  const add = (file: string, table: string) => out.set(`${file}\0${table}`, { file, table });
  for (const { file, text } of files) {
    for (const statement of literals(file, text)) {
      for (const [, name] of statement.matchAll(TABLE_MENTION)) {
        const table = name.toLowerCase();
        const owner = OWNERS[table];
        if (owner === undefined || file.startsWith(owner)) continue;
        const shared = COLUMN_OWNERS[table];
        if (shared && file.startsWith(shared.owner) && onlyOwnedColumns(statement, table)) continue;
        add(file, table);
      }
      for (const [table, { owner, columns }] of Object.entries(COLUMN_OWNERS)) {
        if (file.startsWith(owner) || statement.search(TABLE_MENTION) < 0) continue;
        for (const column of columns) if (new RegExp(`\\b${column}\\b`, 'i').test(statement)) add(file, `${table}.${column}`);
      }
    }
  }
  return [...out.values()].sort((a, b) => a.file.localeCompare(b.file) || a.table.localeCompare(b.table));
}

function sourceFiles(): { file: string; text: string }[] {
  const dir = join(ROOT, 'src');
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => {
      const path = join(dir, name);
      return { file: relative(ROOT, path).split(sep).join('/'), text: readFileSync(path, 'utf8') };
    });
}

const key = (m: Mention) => `${m.file} → ${m.table}`;

describe('data ownership', () => {
  it('finds tables and columns named outside their domain, in SQL texts only', () => {
    const found = violations([
      // Another domain's table, after from, join, into, update or delete from; quoted or not.
      { file: 'src/notifications/x.ts', text: 'const q = `select id from users where id = ?`; const r = `select 1 from notifications`;' },
      { file: 'src/app/y.ts', text: 'await em.execute(`delete from api_keys where user_id = ${id}`, []);' },
      { file: 'src/infra/z.ts', text: 'sql.execute(\'insert into "notification_counters" (user_id) values (?)\');' },
      { file: 'src/auth/w.ts', text: 'sql.execute(`select k.id from api_keys k join organizations o on o.id = k.organization_id`);' },
      // Comments and code are not SQL texts (every string literal is, even prose: a false alarm there is cheap).
      { file: 'src/app/v.ts', text: '// update users set role\nconst users = await usersOf(from, into);' },
      // The skip trace domain names organizations for its own columns only, and no one else names those.
      {
        file: 'src/billing/a.ts',
        text: 'tx.execute(`update organizations set skip_trace_credits = skip_trace_credits - 1 where id = ? and skip_trace_credits > 0`);',
      },
      { file: 'src/billing/b.ts', text: 'em.execute(`select skip_trace_enabled, skip_trace_credits from organizations where id = ?`);' },
      { file: 'src/billing/c.ts', text: 'em.execute(`select name, skip_trace_credits from organizations where id = ?`);' },
      { file: 'src/organizations/d.ts', text: 'em.execute(`update organizations set skip_trace_enabled = false where id = ?`);' },
    ]);
    expect(found.map(key)).toEqual([
      'src/app/y.ts → api_keys',
      'src/auth/w.ts → organizations',
      'src/billing/c.ts → organizations',
      'src/infra/z.ts → notification_counters',
      'src/notifications/x.ts → users',
      'src/organizations/d.ts → organizations.skip_trace_enabled',
    ]);
  });

  it('holds in src/, but for the listed exceptions', () => {
    const allowed = new Set(EXCEPTIONS.map(key));
    expect(
      violations(sourceFiles())
        .map(key)
        .filter((mention) => !allowed.has(mention)),
    ).toEqual([]);
  });

  it('lists no exception that no longer occurs', () => {
    const found = new Set(violations(sourceFiles()).map(key));
    const stale = EXCEPTIONS.map(key).filter((mention) => !found.has(mention));
    expect(stale, 'these entries no longer occur: delete them from the lists above').toEqual([]);
  });
});
