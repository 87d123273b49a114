/**
 * README, Examples: each script under examples/ runs as its own process (tsx, or python3 for the
 * Python one) against the service over HTTP, configured only by API_URL and a key in the
 * environment, and does what its header says.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeVendor, vendorEnv, type FakeVendor } from '../support/fake-vendor.js';
import { publish, startService, type Provisioned, type TestService } from '../support/harness.js';

let service: TestService;
let vendor: FakeVendor;
let reader: Provisioned;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs an example to its end (asynchronously: the service answering it lives in this process).
 * `onOutput` sees stdout as it grows, to act between the example's steps (or signal the process).
 */
function runExample(
  command: string[],
  env: Record<string, string>,
  onOutput?: (stdout: string, child: ChildProcess) => void,
): Promise<Run> {
  const [program, ...args] = command[0].endsWith('.py') ? ['python3', ...command] : [process.execPath, '--import', 'tsx', ...command];
  const child = spawn(program, args, {
    env: { PATH: process.env.PATH, API_URL: service.baseUrl, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    onOutput?.(stdout, child);
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

beforeAll(async () => {
  vendor = await startFakeVendor();
  service = await startService({ ...vendorEnv(vendor), SKIPTRACE_TIMEOUT_MS: '300', SKIPTRACE_MAX_IN_FLIGHT: '1' });
  reader = await service.provision({ scopes: ['READ', 'WRITE'] });
  const start = Date.parse('2026-01-01T00:00:00Z');
  await publish(
    service,
    reader.userId,
    Array.from({ length: 23 }, (_, i) => ({ title: `Example ${i}`, createdAt: new Date(start + i * 60_000).toISOString() })),
  );
});
afterAll(async () => {
  await service?.close();
  await vendor?.close();
});

/** The caller's feed as the database orders it: newest first, then id. */
async function feedIds(userId: string): Promise<string[]> {
  const rows = await service.sql<{ id: string }>('select id from notifications where user_id = ? order by created_at desc, id desc', [
    userId,
  ]);
  return rows.map((row) => row.id);
}

describe('paging through the feed', () => {
  for (const script of ['examples/page-through-feed.ts', 'examples/python/page_through_feed.py']) {
    it(`${script} lists every notification once, newest first`, async () => {
      const run = await runExample([script], { GATEWAY_KEY: reader.key, PAGE_SIZE: '5' });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const listed = run.stdout.split('\n').flatMap((line) => /^([0-9a-f-]{36}) /.exec(line)?.[1] ?? []);
      expect(listed).toEqual(await feedIds(reader.userId));
      expect(run.stdout).toContain('23 notifications in 5 pages (total 23)');
    });

    it(`${script} reports an error with its code and request id`, async () => {
      const run = await runExample([script], { GATEWAY_KEY: `gk_${'Q'.repeat(40)}` });
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(/401 invalid_key: .* \(request [A-Za-z0-9-]+\)/);
    });
  }
});

describe('polling the counts, then listing', () => {
  it('lists the unread notifications when the unread count goes up, and not when it stays', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    const ids = await publish(
      service,
      user.userId,
      Array.from({ length: 5 }, (_, i) => ({ title: `Poll ${i}`, createdAt: new Date(Date.now() - (5 - i) * 60_000).toISOString() })),
    );
    const marked = await service.call(user.key, {
      operationId: 'markNotificationsRead',
      variables: { notificationIds: ids.slice(0, 2), isSeen: true },
    });
    expect(marked.body.data.updatedCount).toBe(2);

    let published: Promise<string[]> | undefined;
    const run = await runExample(
      ['examples/poll-counts-then-list.ts'],
      { GATEWAY_KEY: user.key, POLL_ROUNDS: '3', POLL_INTERVAL_MS: '1500' },
      (stdout) => {
        // Between rounds 2 and 3, two new notifications arrive.
        if (!published && stdout.includes('round 2:'))
          published = publish(service, user.userId, [
            { title: 'Poll new A', createdAt: new Date(Date.now() + 1_000).toISOString() },
            { title: 'Poll new B', createdAt: new Date(Date.now() + 2_000).toISOString() },
          ]);
      },
    );
    await published;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const rounds = run.stdout.split(/(?=^round )/m);
    expect(rounds).toHaveLength(3);
    expect(rounds[0].split('\n').filter(Boolean)).toEqual([
      'round 1: 3 unread, 2 read',
      '  unread: Poll 4',
      '  unread: Poll 3',
      '  unread: Poll 2',
    ]);
    expect(rounds[1].trim()).toBe('round 2: 3 unread, 2 read');
    expect(rounds[2].split('\n').filter(Boolean).slice(0, 3)).toEqual([
      'round 3: 5 unread, 2 read',
      '  unread: Poll new B',
      '  unread: Poll new A',
    ]);
  });
});

describe('marking everything read', () => {
  it('marks every unread row of the given type read, leaves the other types alone, then shows the counts', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    await publish(service, user.userId, [
      { title: 'Missed 1', notificationType: 'call_missed' },
      { title: 'Missed 2', notificationType: 'call_missed' },
      { title: 'Deal', notificationType: 'deal_created' },
    ]);
    const typed = await runExample(['examples/mark-all-read.ts', 'call_missed'], { GATEWAY_KEY: user.key });
    expect(typed.stderr).toBe('');
    expect(typed.code).toBe(0);
    expect(typed.stdout.split('\n').filter(Boolean)).toEqual(['marked 2 read', 'now 0 unread, 2 read']);
    const rest = await service.call(user.key, { operationId: 'getNotificationCounts' });
    expect(rest.body.data).toMatchObject({ unreadCount: 1, readCount: 2 });

    const all = await runExample(['examples/mark-all-read.ts'], { GATEWAY_KEY: user.key });
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n').filter(Boolean)).toEqual(['marked 1 read', 'now 0 unread, 3 read']);
  });
});

describe('watching the feed', () => {
  it('prints a created and an updated event as they happen, then stops after WATCH_EVENTS', async () => {
    const user = await service.provision({ scopes: ['READ', 'WRITE'] });
    await publish(service, user.userId, [{ title: 'Before watching' }]);
    let changes: Promise<string> | undefined;
    const run = await runExample(['examples/watch-notifications.ts'], { GATEWAY_KEY: user.key, WATCH_EVENTS: '2' }, (stdout) => {
      // Only once the stream is open: events are not replayed.
      if (!changes && stdout.includes('watching…'))
        changes = (async () => {
          const [id] = await publish(service, user.userId, [{ title: 'Watched one' }]);
          const marked = await service.call(user.key, { operationId: 'markAllNotificationsRead', variables: { isSeen: true } });
          expect(marked.body.data.updatedCount).toBe(2);
          return id;
        })();
    });
    const id = await changes;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n').filter(Boolean)).toEqual(['watching…', `created ${id} Watched one`, 'updated 2 ids, 0 unread']);
  });

  it('stops quietly on SIGINT', async () => {
    const user = await service.provision();
    const run = await runExample(['examples/watch-notifications.ts'], { GATEWAY_KEY: user.key }, (stdout, child) => {
      if (!child.killed && stdout.includes('watching…')) child.kill('SIGINT');
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n').filter(Boolean)).toEqual(['watching…']);
  });

  it('ends with the invalid_key error once its key is revoked', async () => {
    const user = await service.provision();
    let revoked: Promise<unknown> | undefined;
    const run = await runExample(['examples/watch-notifications.ts'], { GATEWAY_KEY: user.key }, (stdout) => {
      if (!revoked && stdout.includes('watching…'))
        revoked = service.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) }`, { id: user.keyId });
    });
    await revoked;
    expect(run.stdout.split('\n').filter(Boolean)).toEqual(['watching…']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/200 invalid_key: The key was revoked; the stream has ended\. \(request [A-Za-z0-9-]+\)/);
  });

  it('reports a refused open (a key without READ) as its error', async () => {
    const writer = await service.provision({ scopes: ['WRITE'] });
    const run = await runExample(['examples/watch-notifications.ts'], { GATEWAY_KEY: writer.key });
    expect(run.stdout).toBe('');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/403 insufficient_scope: .* \(request [A-Za-z0-9-]+\)/);
  });
});

describe('a skip trace with retries', () => {
  /** Holds the key's one in-flight slot: a request whose body never finishes arriving. */
  function holdSlot(key: string): ClientRequest {
    const url = new URL('/api/v1/skiptrace', service.baseUrl);
    const held = httpRequest(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': '500' },
    });
    held.on('error', () => undefined);
    held.write('{"address":');
    return held;
  }

  it('waits out a 429 (Retry-After) and a 504, then gets the cached trace: one vendor call, one credit', async () => {
    const admin = await service.provision({ role: 'ADMIN', scopes: ['READ'] });
    const key = (
      await service.graphql(`mutation($o: ID!) { generateSkipTraceKey(organizationId: $o) { secret } }`, { o: admin.organizationId })
    ).body.data.generateSkipTraceKey.secret;
    await service.graphql(`mutation($o: ID!) { addSkipTraceCredits(organizationId: $o, amount: 5, reference: "examples") { id } }`, {
      o: admin.organizationId,
    });
    vendor.reset();
    vendor.setMode('slow');
    vendor.setDelay(700); // longer than SKIPTRACE_TIMEOUT_MS (300): the first trace is a 504

    const held = holdSlot(key);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // An address no earlier run has traced: the result cache outlives a test run on a real database.
    const address = {
      line1: `${Math.floor(Math.random() * 90_000) + 100} Retry ${randomUUID().slice(0, 8)} Rd`,
      city: 'Austin',
      state: 'TX',
      zip: '78701',
    };
    const env = { SKIPTRACE_KEY: key, ADDRESS_JSON: JSON.stringify(address) };
    const run = await runExample(['examples/skip-trace-with-retry.ts'], env, (stdout) => {
      if (stdout.includes('attempt 1: 429') && !held.destroyed) held.destroy(); // the caller goes away: its slot is freed
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const attempts = run.stdout.split('\n').filter((line) => line.startsWith('attempt '));
    expect(attempts).toHaveLength(3);
    expect(attempts[0]).toBe('attempt 1: 429 concurrency_limit; retrying after Retry-After: 1 s');
    expect(attempts[1]).toMatch(/^attempt 2: 504 timeout; the trace goes on, retrying in 1000 ms$/);
    expect(attempts[2]).toMatch(/^attempt 3: 200 records_found, 2 persons \(trace [0-9a-f-]{36}\)$/);

    expect(vendor.calls).toHaveLength(1);
    const organization = await service.graphql(`query($o: ID!) { organization(id: $o) { skipTraceCredits } }`, { o: admin.organizationId });
    expect(organization.body.data.organization.skipTraceCredits).toBe(4);
  });
});

describe('tracing a list', () => {
  it('examples/trace-a-list.ts uploads a CSV, follows the job to its end and writes the results CSV with the caller’s columns', async () => {
    const { setupBillingOrg, uniqueAddress } = await import('../support/billing.js');
    const { csvRows } = await import('../support/jobs.js');
    const { ownDatabase } = await import('../support/webhooks.js');
    const { mkdtempSync, readFileSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    vendor.reset();
    // On a database of its own: every instance's worker claims the jobs of its database, and other
    // files' services on the shared one trace with other providers.
    const database = await ownDatabase();
    const jobs = await startService({ ...vendorEnv(vendor), ...database.env });
    try {
      const org = await setupBillingOrg(jobs, 20);
      const dir = mkdtempSync(join(tmpdir(), 'trace-a-list-'));
      const ids = Array.from({ length: 12 }, (_, i) => `crm-${i}`);
      const rows = ids.map((id) => {
        const a = uniqueAddress();
        return `${id},${a.line1},${a.city},${a.state},${a.zip}`;
      });
      writeFileSync(join(dir, 'leads.csv'), ['crm_id,Line1,City,State,ZIP', ...rows].join('\n'));
      const run = await runExample(['examples/trace-a-list.ts', join(dir, 'leads.csv'), join(dir, 'results.csv')], {
        SKIPTRACE_KEY: org.key,
        API_URL: jobs.baseUrl,
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^job [0-9a-f-]{36}: 12 rows$/m);
      expect(run.stdout).toMatch(/^completed: /m);
      const written = await csvRows(readFileSync(join(dir, 'results.csv'), 'utf8'));
      expect(written[0].slice(0, 6)).toEqual(['crm_id', 'Line1', 'City', 'State', 'ZIP', 'status']);
      expect(written.slice(1).map((row) => row[0])).toEqual(ids);
    } finally {
      await jobs.close();
      await database.drop();
    }
  });
});
