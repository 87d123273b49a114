import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startFakeVendor, type FakeVendor } from '../support/fake-vendor.js';
import { freePort } from '../support/local-engines.js';

/**
 * Runs the service as its own process, exactly as `npm start` does (the bundle `npm run build`
 * writes, with the start script's Node flags, heap caps included), so that tests can use two of
 * them at once, kill their connections, and send them signals.
 */
export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  logs: string[];
  /** What the process wrote to stderr alone (also in `logs`). */
  stderr: string[];
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function requireRealBackends(): { databaseUrl: string; redisUrl: string } {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  // These tests exist to exercise the shared backends: without them they must fail, not pass by skipping.
  if (!databaseUrl || !redisUrl) throw new Error('process tests need DATABASE_URL and REDIS_URL');
  return { databaseUrl, redisUrl };
}

export const platformToken = `pt_${randomBytes(24).toString('hex')}`;

export { freePort };

let startCommand: string[] | undefined;

/** Builds the bundle once per test file and reads `npm start`'s command line from package.json. */
function productionStartCommand(): string[] {
  if (!startCommand) {
    execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
    const { scripts } = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } };
    const [node, ...args] = scripts.start.split(/\s+/);
    if (node !== 'node') throw new Error(`npm start should run node, not ${node}`);
    startCommand = args;
  }
  return startCommand;
}

/** Starts `npm start`'s command on a free port, collecting its output. */
async function startProcess(env: Record<string, string>) {
  const port = await freePort();
  const child = spawn(process.execPath, productionStartCommand(), {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      INTERNAL_API_TOKEN: platformToken,
      HOST: '127.0.0.1',
      PORT: String(port),
      // Tests backfill rows dated long ago: the retention sweep is tested on its own.
      NOTIFICATION_RETENTION_DAYS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const stderr: string[] = [];
  child.stdout!.on('data', (chunk) => logs.push(String(chunk)));
  child.stderr!.on('data', (chunk) => {
    logs.push(String(chunk));
    stderr.push(String(chunk));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, logs, stderr, exited, url: `http://127.0.0.1:${port}` };
}

/**
 * Runs `npm start`'s command for a start that is expected to stop by itself (a refusal): its exit
 * code (null when it was still running after `timeoutMs` and had to be killed), output and duration.
 */
export async function runServiceToExit(
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<{ code: number | null; output: string; ms: number }> {
  productionStartCommand(); // the build is not part of the measured time
  const started = Date.now();
  const { child, logs, exited } = await startProcess(env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await exited;
  clearTimeout(timer);
  return { code, output: logs.join(''), ms: Date.now() - started };
}

export async function spawnService(env: Record<string, string>): Promise<ServiceProcess> {
  const { child, logs, stderr, exited, url } = await startProcess(env);

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited during start-up:\n${logs.join('')}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`service not ready after 60 s:\n${logs.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    child,
    logs,
    stderr,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The banner is written right after listen; its bytes may reach the pipe just after /readyz answers. */
export async function bannerOf(service: ServiceProcess): Promise<string> {
  const deadline = Date.now() + 5_000;
  while (!/─{72}\n\n/.test(service.stderr.join('')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const banner = /\n─{72}\n[\s\S]*?─{72}\n/.exec(service.stderr.join(''))?.[0];
  if (!banner) throw new Error(`no banner on stderr:\n${service.logs.join('')}`);
  return banner;
}

export async function json(url: string, init: RequestInit & { bearer?: string; body?: string } = {}) {
  const { bearer, ...rest } = init;
  const response = await fetch(url, {
    method: 'POST',
    ...rest,
    headers: {
      'content-type': 'application/json',
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      ...(rest.headers as Record<string, string>),
    },
  });
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body, headers: response.headers };
}

export const graphql = (service: ServiceProcess, query: string, variables: Record<string, unknown> = {}, bearer = platformToken) =>
  json(`${service.url}/graphql`, { bearer, body: JSON.stringify({ query, variables }) });

/** Runs `tasks` with at most `concurrency` in flight. */
export async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await task(i);
      }
    }),
  );
  return results;
}

/**
 * An organization with `credits` and a skip trace key, created through `service` and its key issued
 * through `keyService` (another process, to show both agree).
 */
export async function skipTraceOrganization(service: ServiceProcess, keyService: ServiceProcess, credits: number) {
  const org = await graphql(
    service,
    `
      mutation {
        createOrganization(name: "Process test") {
          id
        }
      }
    `,
  );
  const organizationId = org.body.data.createOrganization.id as string;
  if (credits)
    await graphql(
      service,
      `
        mutation ($o: ID!, $n: Int!) {
          addSkipTraceCredits(organizationId: $o, amount: $n, reference: "seed") {
            id
          }
        }
      `,
      {
        o: organizationId,
        n: credits,
      },
    );
  const key = await graphql(
    keyService,
    `
      mutation ($o: ID!) {
        generateSkipTraceKey(organizationId: $o) {
          secret
        }
      }
    `,
    { o: organizationId },
  );
  return { organizationId, stk: key.body.data.generateSkipTraceKey.secret as string };
}

export interface TwoProcesses {
  vendor: FakeVendor;
  a: ServiceProcess;
  b: ServiceProcess;
  /** A client of the shared database, to check what both processes wrote. */
  db: pg.Client;
}

/**
 * A fake vendor and two service processes on the shared database and Redis, started before the
 * file's tests with `env(vendor)` (given to `assign`) and stopped after them.
 */
export function useTwoProcesses(env: (vendor: FakeVendor) => Record<string, string>, assign: (started: TwoProcesses) => void) {
  const { databaseUrl } = requireRealBackends();
  let started: Partial<TwoProcesses> = {};
  beforeAll(async () => {
    const vendor = await startFakeVendor();
    started.vendor = vendor;
    [started.a, started.b] = await Promise.all([spawnService(env(vendor)), spawnService(env(vendor))]);
    started.db = new pg.Client({ connectionString: databaseUrl });
    await started.db.connect();
    assign(started as TwoProcesses);
  });
  afterAll(async () => {
    await Promise.all([started.a?.stop(), started.b?.stop()]);
    await started.vendor?.close();
    await started.db?.end();
    started = {};
  });
}

/** The organization's balance and its charges' request ids, read from the shared database (a refund deletes its charge's row). */
export async function ledgerOf(db: pg.Client, organizationId: string): Promise<{ credits: number; charges: string[] }> {
  const { rows } = await db.query(
    `select o.skip_trace_credits as credits,
            coalesce((select array_agg(request_id::text) from skip_trace_credit_ledger l where l.organization_id = o.id and kind = 'charge'), '{}') as charges
       from organizations o where o.id = $1`,
    [organizationId],
  );
  return rows[0] as { credits: number; charges: string[] };
}
