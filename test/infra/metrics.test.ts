/**
 * `GET /metrics`: Prometheus text, for the platform token only; its counters move with the
 * traffic they count (charged skip traces, refusals), and its label values are bounded (route
 * patterns, never a caller's URL).
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, usingRealBackends, type HttpResult, type TestService } from '../support/harness.js';
import { uniqueStreet } from '../support/billing.js';

const RATE_LIMIT = 5;

let service: TestService;
beforeAll(async () => {
  // A skip trace key's window of 5 requests a minute: five charged traces fill it, the sixth is refused.
  // One trace in flight per key: a request whose body never arrives holds it.
  service = await startService({ SKIPTRACE_RATE_LIMIT_PER_MIN: String(RATE_LIMIT), SKIPTRACE_MAX_IN_FLIGHT: '1' });
});
afterAll(() => service?.close());

const scrapeWith = (bearer?: string) =>
  service.request('/metrics', { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } });

async function scrape(): Promise<string> {
  const result = await scrapeWith(service.platformToken);
  expect(result.status).toBe(200);
  return result.text;
}

/** The sum of the samples of `name` whose labels include `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => present[key] === value)) sum += Number(match[3]);
  }
  return sum;
}

async function gqlData(query: string, variables: Record<string, unknown> = {}) {
  const { body } = await service.graphql(query, variables);
  if (!body.data || body.errors?.length) throw new Error(`GraphQL failed: ${JSON.stringify(body.errors)}`);
  return body.data;
}

/** An organization with credits and a skip trace key, and a property record to trace. */
async function setupSkipTrace(credits: number) {
  const { createOrganization } = await gqlData(
    `mutation($name: String!) { createOrganization(name: $name, skipTraceEnabled: true) { id } }`,
    {
      name: `Metrics org ${randomUUID()}`,
    },
  );
  const org = createOrganization.id as string;
  await gqlData(
    `mutation($org: ID!, $amount: Int!, $ref: String!) { addSkipTraceCredits(organizationId: $org, amount: $amount, reference: $ref) { id } }`,
    {
      org,
      amount: credits,
      ref: randomUUID(),
    },
  );
  const { generateSkipTraceKey } = await gqlData(`mutation($org: ID!) { generateSkipTraceKey(organizationId: $org) { secret } }`, { org });
  // A street no other run uses: with DATABASE_URL the records and the result cache outlive the run.
  const street = uniqueStreet();
  await gqlData(`mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`, {
    input: [
      {
        address: { line1: `7 ${street} Street`, city: 'Austin', state: 'TX', zip: '78701' },
        owners: [{ type: 'person', firstName: 'Jane', lastName: 'Doe', phones: [{ number: '5125550101', type: 'mobile' }], emails: [] }],
      },
    ],
  });
  return {
    key: generateSkipTraceKey.secret as string,
    address: { line1: `7 ${street} Street`, city: 'Austin', state: 'TX', zip: '78701' },
  };
}

const trace = (key: string, body: unknown): Promise<HttpResult> =>
  service.request('/api/v1/skiptrace', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });

/** The samples of `name` with exactly these labels: present or not, and their value. */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .join(',');
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${wanted}} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('metrics start at zero', () => {
  // First in the file: before any traffic of the other tests has moved a counter.
  it('every labelled counter has a series at 0 for each of its known label values from start-up', async () => {
    const text = await scrape();
    const expected: Array<[string, Record<string, string>]> = [
      ...['records_found', 'no_records_found', 'insufficient_credits', 'feature_unavailable', 'timeout', 'client_closed', 'replayed'].map(
        (outcome): [string, Record<string, string>] => ['crm_skip_trace_outcomes_total', { outcome }],
      ),
      ...['gateway', 'skip_trace', 'platform', 'client_ip'].map((window): [string, Record<string, string>] => [
        'crm_rate_limit_refusals_total',
        { window },
      ]),
      ['crm_concurrency_refusals_total', { kind: 'skip_trace_in_flight' }],
      ['crm_skip_trace_cache_lookups_total', { result: 'hit' }],
      ['crm_skip_trace_cache_lookups_total', { result: 'miss' }],
      ['crm_skip_trace_provider_errors_total', { provider: 'records', reason: 'unresolvable' }],
      ['crm_skip_trace_provider_errors_total', { provider: 'records', reason: 'failure' }],
    ];
    for (const [name, labels] of expected) expect({ name, labels, value: series(text, name, labels) }).toEqual({ name, labels, value: 0 });
    // And no counter of this service waits for its first event to appear.
    const counters = [...text.matchAll(/^# TYPE (crm_\w+) counter$/gm)].map((m) => m[1]);
    for (const name of counters)
      expect({ name, present: new RegExp(`^${name}(\\{|\\s)`, 'm').test(text) }).toEqual({ name, present: true });
    expect(series(text, 'crm_skip_trace_provider_duration_seconds_count', { provider: 'records' })).toBe(0);
  });
});

describe('GET /metrics', () => {
  it('is refused with 401 invalid_key without a credential, with a gateway key and with a skip trace key', async () => {
    const gateway = await service.provision({ role: 'ADMIN' });
    const { key } = await setupSkipTrace(1);
    for (const bearer of [undefined, 'not-a-key', gateway.key, key]) {
      const result = await scrapeWith(bearer);
      expect({ status: result.status, code: result.body?.error?.code }).toEqual({ status: 401, code: 'invalid_key' });
      expect(result.text).not.toContain('crm_');
    }
  });

  it('answers 405 to other methods', async () => {
    const result = await service.request('/metrics', { method: 'POST', headers: { authorization: `Bearer ${service.platformToken}` } });
    expect(result.status).toBe(405);
    expect(result.body.error.code).toBe('method_not_allowed');
  });

  it('serves Prometheus text with the process metrics (event-loop lag) and, on PostgreSQL, the pool', async () => {
    const result = await scrapeWith(service.platformToken);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(result.text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(result.text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(result.text).toContain('# TYPE crm_http_request_duration_seconds histogram');
    if (usingRealBackends) {
      // busy and idle are disjoint: their sum is the open connections, and nothing else is summed in.
      const open = sample(result.text, 'crm_db_pool_connections');
      expect(open).toBeGreaterThan(0);
      expect(open).toBe(
        sample(result.text, 'crm_db_pool_connections', { state: 'busy' }) +
          sample(result.text, 'crm_db_pool_connections', { state: 'idle' }),
      );
      expect(result.text).not.toMatch(/crm_db_pool_connections\{state="total"\}/);
    }
    // Each kind of concurrency refusal is there from the start, and so is the count of marks waiting.
    for (const kind of ['skip_trace_in_flight', 'marks_per_user'])
      expect(result.text).toMatch(new RegExp(`^crm_concurrency_refusals_total\\{kind="${kind}"\\} \\d+$`, 'm'));
    expect(result.text).toMatch(/^crm_feed_writes_waiting \d+$/m);
  });

  it('counts charged skip traces, their outcomes, requests by route, cache lookups and rate-limit refusals', async () => {
    const { key, address } = await setupSkipTrace(10);
    const before = await scrape();
    for (let i = 0; i < RATE_LIMIT; i++) expect((await trace(key, { address })).status).toBe(200);
    const after = await scrape();

    const delta = (name: string, labels: Record<string, string> = {}) => sample(after, name, labels) - sample(before, name, labels);
    expect(delta('crm_skip_trace_credits_charged_total')).toBe(5);
    expect(delta('crm_skip_trace_outcomes_total')).toBe(5);
    expect(delta('crm_skip_trace_outcomes_total', { outcome: 'records_found' })).toBe(5);
    expect(delta('crm_skip_trace_cache_lookups_total')).toBe(5);
    expect(delta('crm_skip_trace_cache_lookups_total', { result: 'miss' })).toBe(1);
    expect(delta('crm_skip_trace_provider_duration_seconds_count', { provider: 'records' })).toBe(1);
    const skipTraceRequests = { route: '/api/v1/skiptrace', method: 'POST', status: '200' };
    expect(delta('crm_http_request_duration_seconds_count', skipTraceRequests)).toBeGreaterThanOrEqual(5);
    expect(delta('crm_http_request_duration_seconds_bucket', { ...skipTraceRequests, le: '+Inf' })).toBeGreaterThanOrEqual(5);

    const refused = await trace(key, { address });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    const last = await scrape();
    expect(
      sample(last, 'crm_rate_limit_refusals_total', { window: 'skip_trace' }) -
        sample(after, 'crm_rate_limit_refusals_total', { window: 'skip_trace' }),
    ).toBe(1);
    expect(sample(last, 'crm_skip_trace_credits_charged_total')).toBe(sample(after, 'crm_skip_trace_credits_charged_total'));
  });

  it('counts concurrency refusals', async () => {
    const { key, address } = await setupSkipTrace(10);
    const before = await scrape();
    // A request whose body never arrives holds the key's one in-flight slot.
    const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /api/v1/skiptrace HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
    );
    try {
      let refused: HttpResult | undefined;
      for (let i = 0; i < 50 && refused?.status !== 429; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        refused = await trace(key, { address });
      }
      expect(refused?.body.error.code).toBe('concurrency_limit');
    } finally {
      socket.destroy();
    }
    const after = await scrape();
    const kind = { kind: 'skip_trace_in_flight' };
    expect(
      sample(after, 'crm_concurrency_refusals_total', kind) - sample(before, 'crm_concurrency_refusals_total', kind),
    ).toBeGreaterThanOrEqual(1);
  });

  it('counts gateway calls by published operationId, anything else as unknown', async () => {
    const gateway = await service.provision({ role: 'ADMIN' });
    const before = await scrape();
    expect((await service.call(gateway.key, { operationId: 'getNotificationCounts', variables: {} })).status).toBe(200);
    expect((await service.call(gateway.key, { operationId: 'secretOperation', variables: {} })).status).toBe(404);
    const after = await scrape();
    const delta = (labels: Record<string, string>) =>
      sample(after, 'crm_gateway_call_duration_seconds_count', labels) - sample(before, 'crm_gateway_call_duration_seconds_count', labels);
    expect(delta({ operation_id: 'getNotificationCounts', status: '200' })).toBe(1);
    expect(delta({ operation_id: 'unknown', status: '404' })).toBe(1);
    expect(after).not.toContain('secretOperation');
  });

  it('labels requests with route patterns, never a raw URL, an id or a query string', async () => {
    expect((await service.request('/api/v1/operations/nope?x=secret')).status).toBe(404);
    expect((await service.request(`/no/such/${randomUUID()}?token=secret`)).status).toBe(404);
    // A URL the router cannot decode (answered before any hook runs: not counted, and never a label).
    expect((await service.request('/api/v1/operations/%E0%A4%Anope?x=secret')).status).toBe(404);
    // A HEAD request is counted once, under its route's pattern.
    expect((await service.request('/api/v1/operations/getNotificationCounts', { method: 'HEAD' })).status).toBe(200);
    const text = await scrape();
    expect(text).not.toContain('secret');
    expect(text).not.toContain('nope');
    expect(text).not.toContain('/no/such');
    expect(
      sample(text, 'crm_http_request_duration_seconds_count', { route: '/api/v1/operations/:operationId', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'crm_http_request_duration_seconds_count', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'crm_http_request_duration_seconds_count', { route: '/api/v1/operations/:operationId', method: 'HEAD', status: '200' }),
    ).toBe(1);
  });
});
