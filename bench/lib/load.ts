/**
 * One load run against one server, with its RSS sampled and its CPU time read meanwhile. Load comes
 * from wrk (a separate process, so the load generator's work is not done by the orchestrator's
 * Node); autocannon, in this process, only runs what wrk cannot express: a fixed count of requests
 * (`amount`, the markAll scenario), or every run when asked (`generator`, for comparison).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import autocannon from 'autocannon';
import { cpuSecondsOf, memoryOf, ROOT } from './servers.js';

export interface HttpRequest {
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface RunResult {
  requests: number;
  rps: number;
  p50: number;
  p99: number;
  /** Socket errors, timeouts and answers other than 2xx/3xx. */
  errors: number;
  /** The errors by kind (wrk: connect, read, write, status, timeout; autocannon: the same and each status code). */
  errorKinds: Record<string, number>;
  peakRssMiB: number;
  /** The server's own CPU time per answered request (user + system), in ms: what the server costs, whatever else runs. */
  cpuMsPerRequest: number;
}

export type LoadGenerator = 'wrk' | 'autocannon';

/** wrk's threads: the machine's two cores; each thread drives half of the connections. */
export const WRK_THREADS = 2;

export interface LoadOptions {
  url: string;
  pid: number;
  connections: number;
  seconds: number;
  /**
   * Connection i's requests, cycled through, so each connection speaks for its own users and keys
   * (with wrk, a thread cycles through the union of its connections' lists).
   */
  perConnection: (connection: number) => HttpRequest[];
  /** Requests in all, instead of `seconds` of load (autocannon). */
  amount?: number;
  /** How long one request may take (10 s unless set). */
  timeoutSeconds?: number;
  /** wrk unless set; autocannon whenever `amount` is. */
  generator?: LoadGenerator;
}

type LoadFigures = Omit<RunResult, 'peakRssMiB' | 'cpuMsPerRequest'>;

export async function runLoad(options: LoadOptions): Promise<RunResult> {
  let peak = memoryOf(options.pid).rss;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(options.pid).rss)), 100);
  const cpuBefore = cpuSecondsOf(options.pid);
  try {
    const figures =
      options.amount !== undefined || options.generator === 'autocannon' ? await runAutocannon(options) : await runWrk(options);
    return {
      ...figures,
      peakRssMiB: Math.max(peak, memoryOf(options.pid).rss),
      cpuMsPerRequest: ((cpuSecondsOf(options.pid) - cpuBefore) * 1000) / Math.max(1, figures.requests),
    };
  } finally {
    clearInterval(sampler);
  }
}

/** The wrk binary on PATH, or an error that says how to get it. */
export function findWrk(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const file = join(dir, 'wrk');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  throw new Error(
    'wrk not found on PATH: the benchmark drives its load with wrk 4.x (Debian/Ubuntu: `apt-get install wrk`; .ci/run installs it).',
  );
}

const MARKER = '@@bench-wrk ';

/**
 * A run of wrk: `-t 2 -c <connections> --latency --timeout`, a Lua script that gives each thread
 * its connections' requests and prints the figures as JSON from `done()`. The run is ended by
 * SIGINT `seconds` after wrk has started its clock (so fractions of a second work; `-d` is only a
 * backstop), and wrk's own duration divides the requests.
 */
async function runWrk(options: LoadOptions): Promise<LoadFigures> {
  const wrk = findWrk();
  const threads = Math.min(WRK_THREADS, options.connections);
  const script = join(ROOT, 'bench/.data/wrk', `${new URL(options.url).port || 'default'}.lua`);
  mkdirSync(join(ROOT, 'bench/.data/wrk'), { recursive: true });
  writeFileSync(script, wrkScript(threadLists(options.perConnection, options.connections, threads)));
  const args = [
    '-oL', // wrk's stdout line by line: its "Running" line says the clock has started
    wrk,
    `-t${threads}`,
    `-c${options.connections}`,
    `-d${Math.ceil(options.seconds) + 2}s`,
    `--timeout`,
    `${options.timeoutSeconds ?? 10}s`,
    '--latency',
    '-s',
    script,
    options.url,
  ];
  const child = spawn('stdbuf', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let timer: NodeJS.Timeout | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (!timer && stdout.includes('Running ')) timer = setTimeout(() => child.kill('SIGINT'), options.seconds * 1000);
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).finally(() => clearTimeout(timer));
  const line = stdout.split('\n').find((l) => l.startsWith(MARKER));
  if (!line) throw new Error(`wrk exited with ${code} and no figures: ${(stderr || stdout).slice(-1000)}`);
  const r = JSON.parse(line.slice(MARKER.length)) as Record<'durationUs' | 'requests' | 'p50Us' | 'p99Us', number> & {
    errors: Record<string, number>;
  };
  // A run in which nothing was answered measured nothing: it counts as an error, not as a figure.
  const kinds = { ...r.errors, ...(r.requests === 0 && { 'none answered': 1 }) };
  return {
    requests: r.requests,
    rps: r.requests / (r.durationUs / 1e6),
    p50: r.p50Us / 1000,
    p99: r.p99Us / 1000,
    errors: Object.values(kinds).reduce((a, b) => a + b, 0),
    errorKinds: Object.fromEntries(Object.entries(kinds).filter(([, n]) => n > 0)),
  };
}

/** Thread t's requests: its connections' lists (c ≡ t mod threads) interleaved, so consecutive requests are for different users. */
export function threadLists(perConnection: (connection: number) => HttpRequest[], connections: number, threads: number): HttpRequest[][] {
  return Array.from({ length: threads }, (_, t) => {
    const lists: HttpRequest[][] = [];
    for (let c = t; c < connections; c += threads) lists.push(perConnection(c));
    const longest = Math.max(...lists.map((l) => l.length));
    const merged: HttpRequest[] = [];
    for (let i = 0; i < longest; i++) for (const list of lists) if (i < list.length) merged.push(list[i]);
    return merged;
  });
}

/**
 * A Lua string literal: quotes and backslashes escaped, control characters as three-digit decimal
 * escapes (so a digit after one is not read into it), other characters as they are (UTF-8).
 */
function luaString(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.charCodeAt(0);
    out += ch === '\\' || ch === '"' ? `\\${ch}` : code < 0x20 || code === 0x7f ? `\\${String(code).padStart(3, '0')}` : ch;
  }
  return `${out}"`;
}

const luaRequest = (r: HttpRequest) =>
  `{${luaString(r.method)},${luaString(r.path)},{${Object.entries(r.headers)
    .map(([k, v]) => `[${luaString(k)}]=${luaString(v)}`)
    .join(',')}}${r.body === undefined ? '' : `,${luaString(r.body)}`}}`;

/**
 * The Lua script of a run. Every thread loads it: `setup` numbers the threads (`thread:set`; wrk
 * copies only flat values between its Lua states), `init` formats that thread's requests once,
 * `request` cycles through them, `done` prints the figures. No `response()` callback: it would
 * slow wrk down, and `summary.errors.status` already counts the answers ≥ 400.
 */
export function wrkScript(lists: HttpRequest[][]): string {
  return `-- generated by bench/lib/load.ts for one run
local lists = {
${lists.map((list) => `{\n${list.map(luaRequest).join(',\n')}\n}`).join(',\n')}
}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_index", threads)
end
local formatted, next_index = {}, 0
function init(args)
  for i, r in ipairs(lists[thread_index]) do formatted[i] = wrk.format(r[1], r[2], r[3], r[4]) end
end
function request()
  next_index = next_index % #formatted + 1
  return formatted[next_index]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '${MARKER}{"durationUs":%.0f,"requests":%.0f,"p50Us":%.0f,"p99Us":%.0f,"errors":{"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f}}\\n',
    summary.duration, summary.requests, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
`;
}

/** autocannon in this process: each connection with its own list; a count of requests (`amount`) or `seconds`. */
async function runAutocannon(options: LoadOptions): Promise<LoadFigures> {
  let next = 0;
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.seconds,
    ...(options.amount !== undefined && { amount: options.amount }),
    timeout: options.timeoutSeconds ?? 10,
    sampleInt: 100, // the stop check runs on this tick: the default (1 s) rounds every run up to whole seconds
    setupClient: (client: autocannon.Client) => {
      const connection = next++ % options.connections;
      client.setRequests(options.perConnection(connection));
    },
  });
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(
    (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {},
  ))
    statusCodes[code] = Number(stat.count);
  const total = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  const errorKinds = Object.fromEntries(
    Object.entries({ connection: result.errors, timeout: result.timeouts, non2xx: result.non2xx }).filter(([, n]) => n > 0),
  );
  if (result.non2xx) Object.assign(errorKinds, statusCodes);
  return {
    requests: total,
    rps: total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    errorKinds,
  };
}
