/**
 * The `jobs` scenario (not a wrk load): one job of `size.items` cached addresses (the data's
 * cached traces, repeated, each row with its own `crm_id`), sent as CSV to one service instance,
 * polled until completed, then its results downloaded as CSV. It reports items per second, the
 * instance's CPU per item against its CPU per single `POST /api/v1/skiptrace` of the same cached
 * addresses measured just before in the same run, and its RSS while the job runs and while the CSV
 * downloads, against its RSS idle just before the job.
 */
import { log, sleep } from './lib/common.js';
import { cpuSecondsOf, memoryOf, type Server } from './lib/servers.js';
import type { Fixture } from './scenarios.js';

export const JOBS_SCENARIO = 'jobs';
/** The job, 10,000 items, in --quick runs too (the quick data's cached traces repeat more often). */
export const JOB_SIZE = { items: 10_000, singleCalls: 2_000 };
/** The single calls' concurrency: the job's default worker concurrency. */
const SINGLE_CONCURRENCY = 10;
const POLL_MS = 250;

export interface JobsResult {
  items: number;
  seconds: number;
  itemsPerSecond: number;
  cpuMsPerItem: number;
  singleCalls: number;
  cpuMsPerSingleCall: number;
  rssIdleMiB: number;
  rssPeakJobMiB: number;
  rssPeakDownloadMiB: number;
  downloadSeconds: number;
  /** Rows of the downloaded CSV whose crm_id is the one sent on that row; all of them when the job kept every row. */
  rowsInPlace: number;
  /** Items that ended other than records_found or no_records_found. */
  failed: number;
}

/** Samples the process's RSS every 100 ms until stopped; the peak. */
function rssSampler(pid: number) {
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rss)), 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, memoryOf(pid).rss);
  };
}

const csvCell = (value: string) => (/[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

/** The job's CSV: a caller's own column first, then the address columns. */
function jobCsv(fixture: Fixture, items: number): string {
  const lines = ['crm_id,line1,city,state,zip'];
  for (let i = 0; i < items; i++) {
    const a = fixture.traces[i % fixture.traces.length];
    lines.push([`crm-${i}`, a.line1, a.city, a.state, a.zip].map(csvCell).join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** CPU ms per single trace of the same cached addresses: `count` calls, SINGLE_CONCURRENCY at a time. */
async function singleCallCpu(service: Server, fixture: Fixture, key: string, count: number): Promise<number> {
  const send = (i: number) => {
    const address = fixture.traces[i % fixture.traces.length];
    return fetch(`${service.url}/api/v1/skiptrace`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ address }),
    }).then(async (response) => {
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`jobs: a single trace answered ${response.status}`);
    });
  };
  // A warm-up, as the wrk scenarios have.
  for (let i = 0; i < SINGLE_CONCURRENCY * 5; i++) await send(i);
  const before = cpuSecondsOf(service.pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: SINGLE_CONCURRENCY }, async () => {
      while (next < count) await send(next++);
    }),
  );
  return ((cpuSecondsOf(service.pid) - before) * 1000) / count;
}

async function getJson<T>(url: string, key: string): Promise<T> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
  if (response.status !== 200) throw new Error(`jobs: GET ${url} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as T;
}

/** Sends the job and polls it until completed: its id, seconds, CPU ms per item, failed items and peak RSS. */
async function runJob(service: Server, key: string, csv: string, items: number) {
  const peak = rssSampler(service.pid);
  const cpuBefore = cpuSecondsOf(service.pid);
  const started = performance.now();
  const created = await fetch(`${service.url}/api/v1/skiptrace/jobs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'text/csv' },
    body: csv,
  });
  const body = (await created.json()) as { id?: string };
  if (created.status !== 202 || !body.id) throw new Error(`jobs: the job was refused: ${created.status} ${JSON.stringify(body)}`);
  let job: { status: string; counts: { failed: number; cancelled: number } };
  do {
    await sleep(POLL_MS);
    job = await getJson<typeof job>(`${service.url}/api/v1/skiptrace/jobs/${body.id}`, key);
  } while (job.status !== 'completed' && job.status !== 'cancelled');
  const seconds = (performance.now() - started) / 1000;
  const cpuMsPerItem = ((cpuSecondsOf(service.pid) - cpuBefore) * 1000) / items;
  return { id: body.id, seconds, cpuMsPerItem, failed: job.counts.failed + job.counts.cancelled, rssPeak: peak() };
}

/** Downloads the job's CSV (streamed, read as it arrives): seconds, peak RSS, and how many rows kept their crm_id. */
async function downloadCsv(service: Server, key: string, id: string, items: number) {
  const peak = rssSampler(service.pid);
  const started = performance.now();
  const response = await fetch(`${service.url}/api/v1/skiptrace/jobs/${id}/results`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/csv' },
  });
  if (response.status !== 200) throw new Error(`jobs: the CSV download answered ${response.status}`);
  const text = await response.text();
  const seconds = (performance.now() - started) / 1000;
  const rows = text
    .split('\n')
    .filter((line) => line.length > 0)
    .slice(1);
  const inPlace = rows.filter((line, i) => line.startsWith(`crm-${i},`)).length;
  return { seconds, rssPeak: peak(), rowsInPlace: rows.length === items ? inPlace : 0 };
}

export async function measureJobs(
  service: Server,
  fixture: Fixture,
  size: { items: number; singleCalls: number } = JOB_SIZE,
): Promise<JobsResult> {
  // An organization of its own in the data (the last), so its single calls and job share its balance only.
  const key = fixture.skipTraceKeys.at(-1)!;
  const csv = jobCsv(fixture, size.items);
  const cpuMsPerSingleCall = await singleCallCpu(service, fixture, key, size.singleCalls);
  log(`jobs: single calls ${cpuMsPerSingleCall.toFixed(2)} ms CPU each (${size.singleCalls}, ${SINGLE_CONCURRENCY} at a time)`);
  await sleep(1000);
  const rssIdle = memoryOf(service.pid).rss;
  const job = await runJob(service, key, csv, size.items);
  const download = await downloadCsv(service, key, job.id, size.items);
  const result: JobsResult = {
    items: size.items,
    seconds: job.seconds,
    itemsPerSecond: size.items / job.seconds,
    cpuMsPerItem: job.cpuMsPerItem,
    singleCalls: size.singleCalls,
    cpuMsPerSingleCall,
    rssIdleMiB: rssIdle,
    rssPeakJobMiB: job.rssPeak,
    rssPeakDownloadMiB: download.rssPeak,
    downloadSeconds: download.seconds,
    rowsInPlace: download.rowsInPlace,
    failed: job.failed,
  };
  log(
    `jobs: ${size.items} items in ${job.seconds.toFixed(1)} s (${result.itemsPerSecond.toFixed(0)} items/s), ${job.cpuMsPerItem.toFixed(2)} ms CPU per item; ` +
      `RSS idle ${rssIdle.toFixed(0)} MiB, job ${job.rssPeak.toFixed(0)} MiB, download ${download.rssPeak.toFixed(0)} MiB (${download.seconds.toFixed(1)} s); ` +
      `${download.rowsInPlace} rows in place, ${job.failed} failed`,
  );
  return result;
}

export function renderJobs(result: JobsResult): string[] {
  const fmt = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0));
  const ratio = result.cpuMsPerItem / result.cpuMsPerSingleCall;
  const above = Math.max(result.rssPeakJobMiB, result.rssPeakDownloadMiB) - result.rssIdleMiB;
  return [
    `Jobs (\`${JOBS_SCENARIO}\`): one CSV job of ${result.items} cached addresses (each row with its own \`crm_id\`), polled every ${POLL_MS} ms until completed: ` +
      `${fmt(result.seconds)} s, **${fmt(result.itemsPerSecond)} items/s**, ${result.failed} items failed or cancelled; ` +
      `its CSV downloaded in ${fmt(result.downloadSeconds)} s, ${result.rowsInPlace} of ${result.items} rows with their own \`crm_id\` in place. ` +
      `Service CPU ${fmt(result.cpuMsPerItem)} ms per item (polls included) against ${fmt(result.cpuMsPerSingleCall)} ms per single cached trace ` +
      `(${result.singleCalls} calls, ${SINGLE_CONCURRENCY} at a time, just before): ${ratio.toFixed(2)}× — target at most 0.5×: ${ratio <= 0.5 ? '**met**' : '**not met**'}. ` +
      `RSS ${fmt(result.rssIdleMiB)} MiB idle, peak ${fmt(result.rssPeakJobMiB)} MiB while the job ran and ${fmt(result.rssPeakDownloadMiB)} MiB while its CSV downloaded: ` +
      `${fmt(above)} MiB above idle — target at most 50 MB: ${above * 1.048576 <= 50 ? '**met**' : '**not met**'}.`,
    '',
  ];
}
