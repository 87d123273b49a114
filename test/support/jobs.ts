/** Helpers of the skip trace job tests: submit a job (JSON or CSV), wait for it to end, read its results. */
import type { HttpResult, TestService } from './harness.js';
import { eventually } from './billing.js';

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
