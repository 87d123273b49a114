/** One load run: autocannon against one server, every connection with its own request list, RSS sampled meanwhile. */
import autocannon from 'autocannon';
import { cpuSecondsOf, memoryOf } from './servers.js';

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
  /** Connection errors, timeouts and non-2xx answers. */
  errors: number;
  statusCodes: Record<string, number>;
  peakRssMiB: number;
  /** The server's own CPU time per answered request (user + system), in ms: what the server costs, whatever else runs. */
  cpuMsPerRequest: number;
}

/**
 * `perConnection(i)` gives connection i the list of requests it cycles through, so each
 * connection can speak for its own users and keys.
 */
export async function runLoad(options: {
  url: string;
  pid: number;
  connections: number;
  seconds: number;
  perConnection: (connection: number) => HttpRequest[];
  /** Requests in all, instead of `seconds` of load. */
  amount?: number;
  /** How long one request may take (10 s unless set). */
  timeoutSeconds?: number;
}): Promise<RunResult> {
  let peak = memoryOf(options.pid).rss;
  const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(options.pid).rss)), 100);
  let next = 0;
  const cpuBefore = cpuSecondsOf(options.pid);
  try {
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
    return {
      requests: total,
      rps: total / result.duration,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts + result.non2xx,
      statusCodes,
      peakRssMiB: Math.max(peak, memoryOf(options.pid).rss),
      cpuMsPerRequest: ((cpuSecondsOf(options.pid) - cpuBefore) * 1000) / Math.max(1, total),
    };
  } finally {
    clearInterval(sampler);
  }
}
