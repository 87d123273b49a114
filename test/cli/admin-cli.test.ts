/**
 * The admin CLI (`npm run admin -- <command>`) against the real service over HTTP: every command
 * group through the CLI's main (argv in, stdout/stderr and exit code out), `--json` output
 * parsed, `--help` for every command, and its failures: wrong or missing token, an unreachable
 * URL, a refusal by the service, bad usage. The spawned entry point has its own file.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { EXIT } from '../../src/cli/exit-codes.js';
import { startService, type TestService } from '../support/harness.js';
import { admin, cliEnv, closedUrl } from '../support/admin-cli.js';
import { postTrace, setupBillingOrg, uniqueAddress } from '../support/billing.js';

let service: TestService;
let env: Record<string, string>;
beforeAll(async () => {
  service = await startService();
  env = cliEnv(service);
});
afterAll(() => service?.close());

const run = (...argv: string[]) => admin(argv, env);
/** Runs a command with --json and parses its stdout, failing with its stderr if it did not succeed. */
async function json(...argv: string[]) {
  const result = await run(...argv, '--json');
  if (result.code !== 0) throw new Error(`admin ${argv.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

const GATEWAY_KEY = /^gk_[0-9A-Za-z]{40}$/;
const SKIP_TRACE_KEY = /^stk_[0-9A-Za-z]{40}$/;
const counts = (key: string) => service.call(key, { operationId: 'getNotificationCounts', variables: {} });
const skipTrace = (key: string) =>
  service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: '{}',
  });

describe('org', () => {
  it('creates, shows, lists (one page, --all) and turns skip tracing off, in text and --json', async () => {
    const name = `Acme ${randomUUID()}`;
    const created = await json('org', 'create', name);
    expect(created).toEqual({ id: expect.any(String), name, skipTraceEnabled: true, skipTraceCredits: 0, skipTraceKey: null });

    const shown = await run('org', 'show', created.id);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id\\s+${created.id}$`, 'm'));
    expect(shown.stdout).toMatch(new RegExp(`^name\\s+${name}$`, 'm'));

    const second = await json('org', 'create', `Beta ${randomUUID()}`, '--skip-trace-disabled');
    expect(second.skipTraceEnabled).toBe(false);

    // Newest first. Other test files create organizations meanwhile (newer ones), so positions are
    // compared within one listing, and a page after a cursor holds only older rows.
    const page = await json('org', 'list', '--first', '1');
    expect(page.nodes).toHaveLength(1);
    expect(page.nextCursor).toEqual(expect.any(String));
    const next = await json('org', 'list', '--first', '1', '--after', page.nextCursor);
    const all = await json('org', 'list', '--first', '200', '--all');
    expect(all.nextCursor).toBeNull();
    const ids: string[] = all.nodes.map((o: { id: string }) => o.id);
    expect(ids.indexOf(second.id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(created.id));
    expect(next.nodes[0].id).toBe(ids[ids.indexOf(page.nodes[0].id) + 1]);
    const text = await run('org', 'list', '--first', '1');
    expect(text.stdout.split('\n')[0]).toMatch(/^id\s+name\s+skipTraceEnabled\s+skipTraceCredits\s+skipTraceKey$/);
    expect(text.stderr).toMatch(/^More rows: pass --after \S+ \(or --all\)\.$/m);

    expect((await json('org', 'skip-trace', created.id, 'off')).skipTraceEnabled).toBe(false);
    expect((await json('org', 'show', created.id)).skipTraceEnabled).toBe(false);
  });

  it('says an unknown organization is not found, exit 1', async () => {
    const result = await run('org', 'show', randomUUID());
    expect(result.code).toBe(EXIT.failed);
    expect(result.stderr).toMatch(/^error: NOT_FOUND: No organization /);
  });
});

describe('user', () => {
  it('creates, lists and changes the role of users', async () => {
    const org = await json('org', 'create', `Users ${randomUUID()}`);
    const email = `${randomUUID()}@example.com`;
    const user = await json('user', 'create', '--org', org.id, '--email', email, '--name', 'Ann Lee', '--role', 'ADMIN');
    expect(user).toEqual({ id: expect.any(String), organizationId: org.id, email, name: 'Ann Lee', role: 'ADMIN' });
    const member = await json('user', 'create', '--org', org.id, '--email', `${randomUUID()}@example.com`);
    expect(member.role).toBe('MEMBER');

    const listed = await json('user', 'list', '--org', org.id);
    expect(listed).toEqual({ nodes: [member, user], nextCursor: null });

    expect((await json('user', 'role', user.id, 'MEMBER')).role).toBe('MEMBER');
    const text = await run('user', 'list', '--org', org.id);
    expect(text.stdout).toMatch(new RegExp(`^${user.id}\\s+${email}\\s+Ann Lee\\s+MEMBER$`, 'm'));
  });

  it('refuses a role the service does not have before sending anything (exit 64)', async () => {
    const result = await run('user', 'role', randomUUID(), 'OWNER');
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain("'OWNER' is invalid for argument 'role'. Allowed choices are ADMIN, MEMBER.");
  });
});

describe('key', () => {
  it('issues a key whose secret is printed once and works, lists it by hint only, and revokes it', async () => {
    const org = await json('org', 'create', `Keys ${randomUUID()}`);
    const user = await json('user', 'create', '--org', org.id, '--email', `${randomUUID()}@example.com`);

    const issued = await run('key', 'create', '--user', user.id, '--scopes', 'read');
    expect(issued.code).toBe(0);
    const secret = /^secret\s+(\S+)$/m.exec(issued.stdout)![1];
    expect(secret).toMatch(GATEWAY_KEY);
    expect(issued.stderr).toContain('shown once');
    expect((await counts(secret)).status).toBe(200);

    const other = await json('key', 'create', '--user', user.id);
    expect(other).toMatchObject({ secret: expect.stringMatching(GATEWAY_KEY), scopes: ['READ', 'WRITE'], createdBy: 'platform' });

    const listed = await run('key', 'list', '--user', user.id);
    expect(listed.stdout).not.toContain(secret);
    expect(listed.stdout).not.toContain(other.secret);
    const listedPage = await json('key', 'list', '--user', user.id);
    expect(listedPage.nextCursor).toBeNull();
    const keys = listedPage.nodes;
    expect(keys.map((k: { id: string }) => k.id)).toEqual([other.id, expect.any(String)]);
    // One key a page: the first page says where the next begins, --all follows it.
    const firstPage = await run('key', 'list', '--user', user.id, '--first', '1');
    expect(firstPage.stderr).toMatch(/^More rows: pass --after \S+ \(or --all\)\.$/m);
    expect((await json('key', 'list', '--user', user.id, '--first', '1', '--all')).nodes).toEqual(keys);
    expect(keys[1].hint).toBe(`${secret.slice(0, 8)}…${secret.slice(-4)}`);
    expect(JSON.stringify(keys)).not.toContain(secret.slice(8, -4));

    expect(await json('key', 'revoke', keys[1].id)).toEqual({ id: keys[1].id, revoked: true });
    expect((await counts(secret)).status).toBe(401);
    expect((await json('key', 'list', '--user', user.id)).nodes[1].revokedAt).toEqual(expect.any(String));
  });

  it('refuses an unknown scope locally (exit 64) and passes on the service’s refusal of ADMIN for a MEMBER (exit 1)', async () => {
    const result = await run('key', 'create', '--user', randomUUID(), '--scopes', 'READ,ROOT');
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain('not ROOT');

    const org = await json('org', 'create', `Scopes ${randomUUID()}`);
    const member = await json('user', 'create', '--org', org.id, '--email', `${randomUUID()}@example.com`);
    const refused = await run('key', 'create', '--user', member.id, '--scopes', 'ADMIN', '--json');
    expect(refused.code).toBe(EXIT.failed);
    expect(refused.stdout).toBe('');
    const { error } = JSON.parse(refused.stderr);
    expect(error.code).toEqual(expect.stringMatching(/^(BAD_USER_INPUT|FORBIDDEN)$/));
    expect(error.exitCode).toBe(EXIT.failed);
  });
});

describe('credits', () => {
  it('adds credits once per reference; another amount under the same reference is CONFLICT', async () => {
    const org = await json('org', 'create', `Credits ${randomUUID()}`);
    const reference = `inv-${randomUUID()}`;
    expect((await json('credits', 'add', org.id, '100', '--reference', reference)).skipTraceCredits).toBe(100);
    // A retry of the same purchase changes nothing and succeeds.
    expect((await json('credits', 'add', org.id, '100', '--reference', reference)).skipTraceCredits).toBe(100);
    expect((await json('credits', 'add', org.id, '5', '--reference', `${reference}-2`)).skipTraceCredits).toBe(105);

    const conflict = await run('credits', 'add', org.id, '7', '--reference', reference);
    expect(conflict.code).toBe(EXIT.failed);
    expect(conflict.stderr).toMatch(/^error: CONFLICT: /);
    expect((await json('org', 'show', org.id)).skipTraceCredits).toBe(105);
  });

  it('refuses an amount below 1 before sending anything (exit 64)', async () => {
    for (const amount of ['0', '-5', '1.5', 'ten']) {
      const result = await run('credits', 'add', randomUUID(), amount, '--reference', 'x');
      expect(result.code).toBe(EXIT.usage);
      expect(result.stderr).toContain('must be an integer from 1 to 2147483647');
    }
  });
});

describe('skiptrace-key', () => {
  it('generates (once), rotates and revokes an organization’s key; org show has its hint only', async () => {
    const org = await json('org', 'create', `Trace ${randomUUID()}`);
    const generated = await json('skiptrace-key', 'generate', org.id);
    expect(generated.secret).toMatch(SKIP_TRACE_KEY);
    expect((await skipTrace(generated.secret)).status).not.toBe(401);

    const shown = await run('org', 'show', org.id);
    expect(shown.stdout).toMatch(new RegExp(`^skipTraceKey\\s+${generated.hint}$`, 'm'));
    expect(shown.stdout).not.toContain(generated.secret);

    const again = await run('skiptrace-key', 'generate', org.id);
    expect(again.code).toBe(EXIT.failed);
    expect(again.stderr).toMatch(/^error: CONFLICT: /);

    const rotated = await run('skiptrace-key', 'rotate', org.id);
    expect(rotated.code).toBe(0);
    const secret = /^secret\s+(\S+)$/m.exec(rotated.stdout)![1];
    expect(secret).toMatch(SKIP_TRACE_KEY);
    expect((await skipTrace(generated.secret)).status).toBe(401);
    expect((await skipTrace(secret)).status).not.toBe(401);

    expect(await json('skiptrace-key', 'revoke', org.id)).toEqual({ organizationId: org.id, revoked: true });
    expect((await skipTrace(secret)).status).toBe(401);
    expect((await json('org', 'show', org.id)).skipTraceKey).toBeNull();
    const none = await run('skiptrace-key', 'revoke', org.id, '--json');
    expect(none.code).toBe(EXIT.failed);
    expect(JSON.parse(none.stderr).error.code).toBe('NOT_FOUND');
  });
});

describe('usage', () => {
  it("lists an organization's skip trace calls newest first, pages with --first/--after, and says an unknown organization is not found", async () => {
    const { organizationId, key } = await setupBillingOrg(service, 0);
    // Without credits each trace is a 402, audited: three calls to list.
    for (let i = 0; i < 3; i++) expect((await postTrace(service, key, { address: uniqueAddress() })).status).toBe(402);
    const all = await json('usage', organizationId);
    expect(all.nodes.map((r: { outcome: string; charged: boolean }) => [r.outcome, r.charged])).toEqual(
      Array.from({ length: 3 }, () => ['insufficient_credits', false]),
    );
    const first = await json('usage', organizationId, '--first', '2');
    expect(first.nodes).toHaveLength(2);
    const rest = await json('usage', organizationId, '--first', '2', '--after', first.nextCursor);
    expect([...first.nodes, ...rest.nodes].map((r: { id: string }) => r.id)).toEqual(all.nodes.map((r: { id: string }) => r.id));
    const text = await run('usage', organizationId);
    expect(text.stdout).toMatch(/^id\s+createdAt\s+outcome\s+charged\s+cacheHit$/m);
    for (const missing of [randomUUID(), 'not-an-id']) {
      const none = await run('usage', missing, '--json');
      expect(none.code).toBe(EXIT.failed);
      expect(JSON.parse(none.stderr).error.code).toBe('NOT_FOUND');
    }
  });
});

describe('notifications publish', () => {
  it("publishes one notification into a user's feed, with its optional fields, and passes on a refusal", async () => {
    const reader = await service.provision({ scopes: ['READ'] });
    const published = await json(
      'notifications',
      'publish',
      '--user',
      reader.userId,
      '--type',
      'task_assigned',
      '--title',
      'Call the seller',
      '--body',
      'Before Friday.',
      '--task-id',
      'task_1',
      '--action-type',
      'open_task',
      '--action-target-id',
      'task_1',
    );
    expect(published).toMatchObject({ notificationType: 'task_assigned', title: 'Call the seller' });
    const feed = await service.call(reader.key, { operationId: 'listNotifications', variables: {} });
    expect(feed.body.data.notifications).toEqual([
      expect.objectContaining({ id: published.id, taskId: 'task_1', actionType: 'open_task', actionTargetId: 'task_1', isSeen: false }),
    ]);
    const refused = await run('notifications', 'publish', '--user', reader.userId, '--type', 'no_such_type', '--title', 't', '--body', 'b');
    expect(refused.code).toBe(EXIT.failed);
    expect(refused.stderr).toContain('BAD_USER_INPUT');
  });
});

describe('connection and credential failures', () => {
  it('a wrong token: exit 77, saying the token was refused and where', async () => {
    const result = await admin(['org', 'list'], { ...env, INTERNAL_API_TOKEN: 'not-the-platform-token' });
    expect(result.code).toBe(EXIT.unauthenticated);
    expect(result.stderr).toContain(`The service at ${service.baseUrl} refused the platform token`);
    expect(result.stderr).toContain('INTERNAL_API_TOKEN (or --token) is wrong');
    expect(result.stderr).not.toContain('not-the-platform-token');
    // --token overrides the environment, both ways.
    expect((await admin(['org', 'list', '--token', 'still-wrong-token-1234'], env)).code).toBe(EXIT.unauthenticated);
    expect((await admin(['org', 'list', '--token', service.platformToken], { ...env, INTERNAL_API_TOKEN: 'x' })).code).toBe(0);
  });

  it('no token at all: exit 77 before any request, saying how to set one', async () => {
    const noDevToken = { API_URL: service.baseUrl, DATA_DIR: join(tmpdir(), `no-data-dir-${randomUUID()}`) };
    const result = await admin(['org', 'list'], noDevToken);
    expect(result.code).toBe(EXIT.unauthenticated);
    expect(result.stderr).toContain('No platform token: set INTERNAL_API_TOKEN');
    const asJson = await admin(['org', 'list', '--json'], noDevToken);
    expect(JSON.parse(asJson.stderr).error).toMatchObject({ exitCode: EXIT.unauthenticated });
  });

  it("without a token, uses a local service's development token from DATA_DIR, and never sends it elsewhere", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cli-dev-token-'));
    try {
      writeFileSync(join(dataDir, 'platform-token'), `${service.platformToken}\n`, { mode: 0o600 });
      expect((await admin(['org', 'list'], { API_URL: service.baseUrl, DATA_DIR: dataDir })).code).toBe(0);
      // Another host is not the quick-start service: its token is not read, so nothing is sent.
      const remote = await admin(['org', 'list'], { API_URL: 'http://example.invalid:4000', DATA_DIR: dataDir });
      expect(remote.code).toBe(EXIT.unauthenticated);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('an unreachable service: exit 69, naming the URL (from API_URL or --url)', async () => {
    const url = await closedUrl();
    const fromEnv = await admin(['org', 'list'], { ...env, API_URL: url });
    expect(fromEnv.code).toBe(EXIT.unreachable);
    expect(fromEnv.stderr).toContain(`Cannot reach the service at ${url}`);
    const fromFlag = await admin(['org', 'create', 'Nowhere', '--url', url], env);
    expect(fromFlag.code).toBe(EXIT.unreachable);
    expect(fromFlag.stderr).toContain(url);
    // --url overrides API_URL the other way too.
    expect((await admin(['org', 'list', '--url', service.baseUrl], { ...env, API_URL: url })).code).toBe(0);
  });

  it('a malformed URL or an unknown command or option is a usage error (exit 64)', async () => {
    expect((await admin(['org', 'list', '--url', 'localhost:4000'], env)).code).toBe(EXIT.usage);
    const unknown = await run('org', 'delete', randomUUID());
    expect(unknown.code).toBe(EXIT.usage);
    expect(unknown.stderr).toContain("unknown command 'delete'");
    expect((await run('org', 'list', '--frist', '3')).code).toBe(EXIT.usage);
    expect((await run('org', 'list', '--first', '201')).code).toBe(EXIT.usage);
    expect((await run()).code).toBe(EXIT.usage);
  });
});

describe('--help', () => {
  /** Every command path: `org`, `org create`, … */
  const paths = (command: Command, prefix: string[] = []): string[][] =>
    command.commands.flatMap((sub) => [[...prefix, sub.name()], ...paths(sub, [...prefix, sub.name()])]);

  it('the top level lists every command group, the environment and the exit codes', async () => {
    const result = await run('--help');
    expect(result.code).toBe(0);
    for (const group of ['org', 'user', 'key', 'credits', 'skiptrace-key', 'records', 'usage', 'notifications'])
      expect(result.stdout).toMatch(new RegExp(`^  ${group} `, 'm'));
    for (const text of ['API_URL', 'INTERNAL_API_TOKEN', '--json', '--url', '--token']) expect(result.stdout).toContain(text);
    for (const code of Object.values(EXIT)) expect(result.stdout).toMatch(new RegExp(`^  ${code}\\s+\\S`, 'm'));
  });

  it('every group and command has its own help, needing no token or service', async () => {
    const all = paths(buildProgram({ stdout() {}, stderr() {}, stderrIsTty: false, env: {} }, { exitCode: 0 }));
    expect(all.length).toBeGreaterThanOrEqual(20);
    for (const path of all) {
      const result = await admin([...path, '--help'], {});
      expect(result.code, path.join(' ')).toBe(0);
      expect(result.stdout, path.join(' ')).toContain(`Usage: admin ${path.join(' ')}`);
    }
  });
});
