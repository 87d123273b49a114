/** Servers under test as child processes on the orchestrator's own Node, so RSS is theirs alone. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './common.js';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const LOG_DIR = join(ROOT, 'bench/.data/logs');

/** The servers under test: the service, the two floors, the peer, and (with `--baseline`) the service built from the tree before a change. */
export type ServerKind = 'service' | 'floor' | 'naive' | 'postgraphile' | 'baseline';

/**
 * How each kind is started: its script (the service as `npm start` runs it: the bundle `npm run
 * build` writes), the port the run gives it, its log name, the env it adds. Both floors are
 * `bench/floor.ts`; `FLOOR=naive` selects the naive one.
 */
/**
 * What every benchmark run gives the servers besides their URLs. Thousands of keys are used; the
 * windows are raised as well so a burst on one key is never what is measured. The data is fixed and
 * dated up to a year back: a retention would have the sweep delete part of it during the run.
 */
export const BENCH_SERVER_ENV = {
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  GATEWAY_RATE_LIMIT_PER_MIN: '100000000',
  SKIPTRACE_RATE_LIMIT_PER_MIN: '100000000',
  SKIPTRACE_MAX_IN_FLIGHT: '64',
  NOTIFICATION_RETENTION_DAYS: '0',
};

export const SERVERS: Record<ServerKind, { script: string; port: number; name: string; env?: Record<string, string> }> = {
  service: { script: 'dist/main.js', port: 4301, name: 'service' },
  floor: { script: 'bench/floor.ts', port: 4302, name: 'same-sql-floor' },
  postgraphile: { script: 'bench/postgraphile.ts', port: 4303, name: 'postgraphile' },
  naive: { script: 'bench/floor.ts', port: 4304, name: 'naive-floor', env: { FLOOR: 'naive' } },
  baseline: { script: 'dist/main.js', port: 4305, name: 'service-baseline' },
};

/**
 * Every server runs on one Node: the project's own (`node_modules/.bin/node`, the `node` package
 * in dependencies), whichever Node launched the harness; the machine's may be older.
 */
export const NODE = existsSync(join(ROOT, 'node_modules/.bin/node')) ? join(ROOT, 'node_modules/.bin/node') : process.execPath;
export const NODE_VERSION = execFileSync(NODE, ['--version']).toString().trim();

/** The Node flags of a tree's `npm start` (source maps, heap sizes): each tree's bundle runs exactly as its own production start does. */
const startFlagsOf = (root: string): string[] =>
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
    .split(/\s+/)
    .filter((arg) => arg.startsWith('--'));

/** Builds the service in `root` (`npm run build`: the bundle `npm start` runs) and returns its entry point. */
export function buildService(root: string): string {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  return join(root, 'dist/main.js');
}

export interface Server {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  /** Milliseconds from spawn to the first ready answer. */
  readyMs: number;
  stop(): Promise<void>;
}

/** Resident set size and its high-water mark (MiB) of a process, from /proc. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) / 1024;
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime
  } catch {
    return Number.NaN;
  }
}
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Polls `url` until it answers 200; rejects when the process exits first or the deadline passes. */
async function waitReady(child: ChildProcess, url: string, timeoutMs: number, intervalMs: number) {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once('exit', () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`process exited before ${url} answered`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(intervalMs);
  }
  throw new Error(`${url} not ready within ${timeoutMs} ms`);
}

/**
 * Starts `<script>` on the project's Node with `env` (a `.ts` script through tsx; built `.js` as
 * is, the way `npm start` runs the service), and waits for `readyPath` to answer 200. Output goes
 * to bench/.data/logs/<name>.log.
 */
export async function startServer(options: {
  name: string;
  script: string;
  port: number;
  env: Record<string, string>;
  nodeArgs?: string[];
  cwd?: string;
  readyPath?: string;
  timeoutMs?: number;
  pollMs?: number;
}): Promise<Server> {
  mkdirSync(LOG_DIR, { recursive: true });
  const out = createWriteStream(join(LOG_DIR, `${options.name}.log`), { flags: 'a' });
  const started = performance.now();
  const loader = options.script.endsWith('.ts') ? ['--import', 'tsx'] : startFlagsOf(options.cwd ?? ROOT);
  // BENCH_PROF_DIR=dir: the service and the baseline write CPU profiles there (dir/<name>/) when they exit.
  const prof =
    process.env.BENCH_PROF_DIR && options.name.startsWith('service')
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}/${options.name}`]
      : [];
  const child = spawn(NODE, [...loader, ...prof, ...(options.nodeArgs ?? []), options.script], {
    cwd: options.cwd ?? ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env, PORT: String(options.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(out);
  child.stderr?.pipe(out);
  const url = `http://127.0.0.1:${options.port}`;
  try {
    await waitReady(child, `${url}${options.readyPath ?? '/readyz'}`, options.timeoutMs ?? 120_000, options.pollMs ?? 100);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${options.name}: ${(error as Error).message} (see ${join(LOG_DIR, `${options.name}.log`)})`, { cause: error });
  }
  const readyMs = performance.now() - started;
  return {
    name: options.name,
    url,
    pid: child.pid!,
    child,
    readyMs,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/**
 * The service's bundle (`npm run build` first) on a scratch database, on a random port (not the
 * bench's fixed ones), with the bench's raised windows, no retention (the generated data is dated
 * up to a year back) and `env` on top: for the scripts that measure one thing on data of their own.
 */
export function startScratchService(name: string, databaseUrl: string, env: Record<string, string> = {}): Promise<Server> {
  return startServer({
    name,
    script: 'dist/main.js',
    port: 20_000 + Math.floor(Math.random() * 20_000),
    env: {
      DATABASE_URL: databaseUrl,
      REDIS_URL: process.env.REDIS_URL ?? '',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      INTERNAL_API_TOKEN: `pt_${randomBytes(24).toString('hex')}`,
      GATEWAY_RATE_LIMIT_PER_MIN: '100000000',
      SKIPTRACE_RATE_LIMIT_PER_MIN: '100000000',
      SKIPTRACE_MAX_IN_FLIGHT: '64',
      NOTIFICATION_RETENTION_DAYS: '0',
      ...env,
    },
  });
}
