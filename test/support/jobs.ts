/** Helpers of the skip trace job tests: submit a job (JSON or CSV), wait for it to end, read its results. */
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startService, type HttpResult, type TestService } from './harness.js';
import { eventually, setupBillingOrg, uniqueAddress } from './billing.js';
import { startFakeVendor, vendorEnv, type FakeVendor } from './fake-vendor.js';
import { ownDatabase, type OwnDatabase } from './webhooks.js';

/**
 * Services against a fake vendor, each on a database of its own: every instance's worker claims
 * any job of its database, so a file whose jobs must run on its own vendor keeps them apart from
 * other files' services. `envs`: one service per entry. Started before the file's tests (given to
 * `assign`), closed after them; the vendor is reset before each test.
 */
export function useJobServices(envs: Record<string, string>[], assign: (started: { services: TestService[]; vendor: FakeVendor }) => void) {
  let vendor: FakeVendor | undefined;
  const services: TestService[] = [];
  const databases: OwnDatabase[] = [];
  beforeAll(async () => {
    vendor = await startFakeVendor();
    for (const env of envs) {
      const database = await ownDatabase();
      databases.push(database);
      services.push(await startService({ ...vendorEnv(vendor), SKIPTRACE_JOB_POLL_MS: '50', ...database.env, ...env }));
    }
    assign({ services, vendor });
  });
  afterAll(async () => {
    for (const service of services.splice(0)) await service.close();
    for (const database of databases.splice(0)) await database.drop();
    await vendor?.close();
  });
  beforeEach(() => vendor?.reset());
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** `POST /api/v1/skiptrace/jobs` with a JSON body (a string is sent as is). */
export const postJob = (service: TestService, key: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> =>
  service.request('/api/v1/skiptrace/jobs', {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** `POST /api/v1/skiptrace/jobs` with a CSV body; `query` e.g. `?webhookUrl=…`. */
export const postCsvJob = (service: TestService, key: string, csv: string, query = '', headers: Record<string, string> = {}) =>
  service.request(`/api/v1/skiptrace/jobs${query}`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'text/csv', ...headers },
    body: csv,
  });

export const getJob = (service: TestService, key: string, id: string) =>
  service.request(`/api/v1/skiptrace/jobs/${id}`, { headers: auth(key) });

export const listJobs = (service: TestService, key: string, query = '') =>
  service.request(`/api/v1/skiptrace/jobs${query}`, { headers: auth(key) });

export const jobResults = (service: TestService, key: string, id: string, query = '') =>
  service.request(`/api/v1/skiptrace/jobs/${id}/results${query}`, { headers: auth(key) });

export const cancelJob = (service: TestService, key: string, id: string) =>
  service.request(`/api/v1/skiptrace/jobs/${id}/cancel`, { method: 'POST', headers: auth(key) });

/** The results CSV (`Accept: text/csv`). */
export const jobCsv = (service: TestService, key: string, id: string) =>
  service.request(`/api/v1/skiptrace/jobs/${id}/results`, { headers: { ...auth(key), accept: 'text/csv' } });

/** The job once it has ended (completed or cancelled). */
export const jobEnded = (service: TestService, key: string, id: string, ms = 20_000) =>
  eventually(async () => {
    const job = await getJob(service, key, id);
    return job.body.status === 'completed' || job.body.status === 'cancelled' ? job.body : undefined;
  }, ms);

/** Every result of the job, page by page. */
export async function allResults(service: TestService, key: string, id: string, limit = 1000): Promise<any[]> {
  const results: any[] = [];
  let cursor: string | null = null;
  do {
    const page: HttpResult = await jobResults(service, key, id, `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (page.status !== 200) throw new Error(`results page: ${page.status} ${page.text}`);
    results.push(...page.body.results);
    cursor = page.body.nextCursor;
  } while (cursor);
  return results;
}

/** A CSV's rows (RFC 4180 parsed by the same library a customer might use). */
export async function csvRows(text: string): Promise<string[][]> {
  const { parse } = await import('csv-parse/sync');
  return parse(text, { bom: true }) as string[][];
}

/**
 * One organization's long job, then another organization's short one, every trace `delayMs` on
 * the (slow) vendor: the short job as it ended, the long one as it was then, and the long one once
 * cancelled and ended. For the fairness tests.
 */
export async function longAndShortJobs(service: TestService, vendor: FakeVendor, sizes: { long: number; short: number; delayMs: number }) {
  const item = (i: number) => ({ key: `k${i}`, address: uniqueAddress() });
  vendor.setMode('slow');
  vendor.setDelay(sizes.delayMs);
  try {
    const big = await setupBillingOrg(service, sizes.long + 10);
    const small = await setupBillingOrg(service, sizes.short + 10);
    const long = (await postJob(service, big.key, { items: Array.from({ length: sizes.long }, (_, i) => item(i)) })).body.id;
    const short = (await postJob(service, small.key, { items: Array.from({ length: sizes.short }, (_, i) => item(i)) })).body.id;
    const shortDone = await jobEnded(service, small.key, short);
    const longThen = (await getJob(service, big.key, long)).body;
    await cancelJob(service, big.key, long);
    return { shortDone, longThen, longEnded: await jobEnded(service, big.key, long) };
  } finally {
    vendor.reset();
  }
}
