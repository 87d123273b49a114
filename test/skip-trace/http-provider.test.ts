import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { normalizeActor, standardizeAddress } from '../../src/address/index.js';
import type { ActorInput } from '../../src/address/index.js';
import { createHttpProvider, VENDOR_FAILURE_MESSAGE, type HttpProviderOptions } from '../../src/skip-trace/providers/http-provider.js';
import { UnresolvableAddressError, type TraceRequest } from '../../src/skip-trace/providers/provider.js';
import { FAKE_VENDOR_FAILURE_MESSAGE, startFakeVendor, vendorBody, vendorEntry, type FakeVendor } from '../support/fake-vendor.js';

let vendor: FakeVendor;
let logs: Array<{ level: 'warn' | 'error'; obj: object; msg: string }>;

const log: HttpProviderOptions['log'] = {
  warn: (obj, msg) => logs.push({ level: 'warn', obj, msg }),
  error: (obj, msg) => logs.push({ level: 'error', obj, msg }),
};

const provider = (overrides: Partial<HttpProviderOptions> = {}) =>
  createHttpProvider({ url: vendor.url, apiKey: vendor.apiKey, log, ...overrides });

const request = (actor: ActorInput | null = null): TraceRequest => ({
  requestId: randomUUID(),
  address: standardizeAddress({ line1: '123 Main Street', line2: 'Apt 4', city: 'Austin', state: 'tx', zip: '78701-1234' }),
  actor: normalizeActor(actor),
});

/** Traces and expects the generic failure; returns what was logged. */
async function expectVendorFailure(overrides: Partial<HttpProviderOptions> = {}): Promise<string> {
  const err = await provider(overrides)
    .trace(request())
    .then(
      () => {
        throw new Error('expected the trace to fail');
      },
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(Error);
  expect(err).not.toBeInstanceOf(UnresolvableAddressError);
  expect((err as Error).message).toBe(VENDOR_FAILURE_MESSAGE);
  const logged = JSON.stringify(logs);
  expect(logs.some((l) => l.level === 'error')).toBe(true);
  expect(logged).not.toContain(vendor.apiKey);
  expect(logged).not.toContain('Bearer');
  return logged;
}

/** Answers a matched result with these vendor persons. */
const respondWithPersons = (persons: unknown[]) =>
  vendor.respondWith((requestId) => ({
    status: 200,
    body: vendorBody([vendorEntry(requestId, persons, { matched: true, error: false })]),
  }));

beforeAll(async () => {
  vendor = await startFakeVendor();
});
afterAll(async () => {
  await vendor.close();
});
beforeEach(() => {
  vendor.reset();
  logs = [];
});

describe('request shape', () => {
  it('posts the standardized address and auth header, without name or companyName when there is no actor', async () => {
    const req = request();
    await provider().trace(req);
    expect(vendor.calls).toHaveLength(1);
    const [call] = vendor.calls;
    expect(call.path).toBe('/property/skip-trace');
    expect(call.authorization).toBe(`Bearer ${vendor.apiKey}`);
    expect(call.body).toEqual({
      requests: [
        {
          requestId: req.requestId,
          propertyAddress: { street: '123 MAIN ST APT 4', city: 'AUSTIN', state: 'TX', zip: '78701' },
        },
      ],
    });
    expect(call.body.requests[0].propertyAddress.street).toBe(req.address.line1);
  });

  it('sends name only for a person actor, omitting null parts', async () => {
    await provider().trace(request({ type: 'person', firstName: 'John', lastName: "O'Brien" }));
    await provider().trace(request({ type: 'person', lastName: 'Smith' }));
    const [both, lastOnly] = vendor.calls.map((c) => c.body.requests[0]);
    expect(both.name).toEqual({ first: 'JOHN', last: 'OBRIEN' });
    expect(both).not.toHaveProperty('companyName');
    expect(lastOnly.name).toEqual({ last: 'SMITH' });
  });

  it('sends companyName only for an entity actor', async () => {
    await provider().trace(request({ type: 'entity', name: 'Acme Holdings, L.L.C.' }));
    const [sent] = vendor.calls.map((c) => c.body.requests[0]);
    expect(sent.companyName).toBe('ACME HOLDINGS LLC');
    expect(sent).not.toHaveProperty('name');
  });

  it('joins a base URL with a trailing slash without doubling it', async () => {
    await provider({ url: `${vendor.url}/` }).trace(request());
    expect(vendor.calls.map((c) => c.path)).toEqual(['/property/skip-trace']);
  });
});

describe('outcomes', () => {
  it("'ok' maps persons, phone types, digits-only numbers, emails and missing parts", async () => {
    const result = await provider().trace(request());
    expect(result).toEqual({
      status: 'records_found',
      persons: [
        {
          firstName: 'John',
          middleName: 'Q',
          lastName: 'Smith',
          age: 61,
          phones: [
            { number: '5125550100', type: 'mobile' },
            { number: '5125550101', type: 'residential' },
            { number: '5125550102', type: 'unknown' },
          ],
          emails: ['john@example.com', 'jqsmith@example.net'],
        },
        {
          firstName: 'Mary',
          middleName: null,
          lastName: 'Smith',
          age: null,
          phones: [
            { number: '5125550103', type: 'residential' },
            { number: '5125550104', type: 'residential' },
          ],
          emails: ['mary@example.com'],
        },
      ],
    });
    expect(logs).toEqual([]);
  });

  it("'unmatched' is no_records_found", async () => {
    vendor.setMode('unmatched');
    expect(await provider().trace(request())).toEqual({ status: 'no_records_found', persons: [] });
  });

  it('matched with no persons is no_records_found', async () => {
    respondWithPersons([]);
    expect(await provider().trace(request())).toEqual({ status: 'no_records_found', persons: [] });
  });

  it("'unresolvable' throws UnresolvableAddressError", async () => {
    vendor.setMode('unresolvable');
    await expect(provider().trace(request())).rejects.toBeInstanceOf(UnresolvableAddressError);
    expect(vendor.calls).toHaveLength(1);
  });

  it("'reordered' matches by requestId, not by position", async () => {
    vendor.setMode('reordered');
    const result = await provider().trace(request());
    expect(result.status).toBe('records_found');
    expect(result.persons.map((p) => p.firstName)).toEqual(['John', 'Mary']);
  });

  it("'slow' with a short delay still resolves", async () => {
    vendor.setMode('slow');
    vendor.setDelay(150);
    const result = await provider().trace(request());
    expect(result.status).toBe('records_found');
    expect(result.persons).toHaveLength(2);
  });

  it("does not cancel when the caller's timeout fires: the result still arrives", async () => {
    vendor.setMode('slow');
    vendor.setDelay(300);
    const trace = provider().trace(request());
    const raced = await Promise.race([trace.then(() => 'done'), new Promise((r) => setTimeout(() => r('caller timeout'), 50))]);
    expect(raced).toBe('caller timeout');
    expect((await trace).status).toBe('records_found');
  });
});

describe('mapping', () => {
  it.each([
    ['Mobile', 'mobile'],
    ['MOBILE', 'mobile'],
    ['Land Line', 'residential'],
    ['Landline', 'residential'],
    ['landline', 'residential'],
    ['Residential', 'residential'],
    ['VoIP', 'unknown'],
    ['Fax', 'unknown'],
    ['', 'unknown'],
    [undefined, 'unknown'],
    [7, 'unknown'],
  ])('phone type %j → %s', async (type, expected) => {
    respondWithPersons([{ name: { first: 'A' }, phones: [{ number: '5125550100', type }] }]);
    const { persons } = await provider().trace(request());
    expect(persons[0].phones).toEqual([{ number: '5125550100', type: expected }]);
  });

  it.each([
    ['(512) 555-0100', '5125550100'],
    ['512.555.0100', '5125550100'],
    ['1-512-555-0100', '5125550100'],
    ['+1 (512) 555-0100', '5125550100'],
    ['15125550100', '5125550100'],
    ['25125550100', '25125550100'],
    ['555-0100', '5550100'],
    [5125550100, '5125550100'],
  ])('phone number %j → %s', async (number, expected) => {
    respondWithPersons([{ phones: [{ number, type: 'Mobile' }] }]);
    const { persons } = await provider().trace(request());
    expect(persons[0].phones).toEqual([{ number: expected, type: 'mobile' }]);
  });

  it('drops phones with no digits', async () => {
    respondWithPersons([
      { phones: [{ number: 'n/a', type: 'Mobile' }, { type: 'Mobile' }, { number: '', type: 'Mobile' }, { number: '5125550100' }] },
    ]);
    const { persons } = await provider().trace(request());
    expect(persons[0].phones).toEqual([{ number: '5125550100', type: 'unknown' }]);
  });

  it('missing name parts and a missing or non-number age become null; missing arrays become []', async () => {
    respondWithPersons([{}, { name: { first: 'Ann', middle: '', last: null }, age: '61' }, { name: null, age: null, phones: null }]);
    const { status, persons } = await provider().trace(request());
    expect(status).toBe('records_found');
    const empty = { firstName: null, middleName: null, lastName: null, age: null, phones: [], emails: [] };
    expect(persons).toEqual([empty, { ...empty, firstName: 'Ann' }, empty]);
  });

  it('keeps string emails only', async () => {
    respondWithPersons([
      { emails: [{ email: 'a@example.com' }, { email: '' }, { email: 42 }, {}, 'b@example.com', { email: 'c@example.com' }] },
    ]);
    const { persons } = await provider().trace(request());
    expect(persons[0].emails).toEqual(['a@example.com', 'c@example.com']);
  });
});

describe('failures: generic error, vendor message logged only, exactly one call', () => {
  it("'failing' (HTTP 500) throws without leaking the vendor's message or the API key", async () => {
    vendor.setMode('failing');
    const err = await provider()
      .trace(request())
      .then(
        () => new Error('expected the trace to fail'),
        (e: unknown) => e as Error,
      );
    expect(err.message).toBe(VENDOR_FAILURE_MESSAGE);
    expect(err.message).not.toContain(FAKE_VENDOR_FAILURE_MESSAGE);
    expect(err.message).not.toContain(vendor.apiKey);
    expect(String(err.stack)).not.toContain(FAKE_VENDOR_FAILURE_MESSAGE);
    expect(vendor.calls).toHaveLength(1);
    logs = [];
    const logged = await expectVendorFailure();
    expect(logged).toContain(FAKE_VENDOR_FAILURE_MESSAGE);
    expect(logged).toContain('500');
    expect(vendor.calls).toHaveLength(2);
  });

  it('a wrong API key (401) throws', async () => {
    await expectVendorFailure({ apiKey: 'wrong-key' });
    expect(vendor.calls).toHaveLength(1);
    expect(JSON.stringify(logs)).not.toContain('wrong-key');
  });

  it("'garbage' (200, not JSON) throws", async () => {
    vendor.setMode('garbage');
    await expectVendorFailure();
    expect(vendor.calls).toHaveLength(1);
  });

  it("'wrong-request-id' throws", async () => {
    vendor.setMode('wrong-request-id');
    await expectVendorFailure();
    expect(vendor.calls).toHaveLength(1);
  });

  it('a result without input.requestId throws', async () => {
    vendor.respondWith(() => ({ status: 200, body: vendorBody([{ persons: [], meta: { matched: true, error: false } }]) }));
    await expectVendorFailure();
    expect(vendor.calls).toHaveLength(1);
  });

  it('a vendor error other than address_not_found throws', async () => {
    vendor.respondWith((requestId) => ({
      status: 200,
      body: vendorBody([vendorEntry(requestId, [], { matched: false, error: true, errorCode: 'quota_exceeded' })]),
    }));
    const logged = await expectVendorFailure();
    expect(logged).toContain('quota_exceeded');
    expect(vendor.calls).toHaveLength(1);
  });

  it.each([
    ['a JSON array', []],
    ['no result', { status: { code: 200 } }],
    ['data not an array', { result: { data: {} } }],
    ['an error status in the body', { status: { code: 500, text: 'oops' }, result: { data: [] } }],
  ])('a malformed body (%s) throws', async (_, body) => {
    vendor.respondWith(() => ({ status: 200, body }));
    await expectVendorFailure();
    expect(vendor.calls).toHaveLength(1);
  });

  it.each([
    ['no meta', (id: string) => ({ input: { requestId: id }, persons: [] })],
    ['matched not a boolean', (id: string) => vendorEntry(id, [], { matched: 'yes' })],
    ['persons not an array', (id: string) => vendorEntry(id, {} as unknown[], { matched: true, error: false })],
    ['a person not an object', (id: string) => vendorEntry(id, ['John'], { matched: true, error: false })],
    ['phones not an array', (id: string) => vendorEntry(id, [{ phones: 'x' }], { matched: true, error: false })],
  ])('a malformed result (%s) throws', async (_, entry) => {
    vendor.respondWith((requestId) => ({ status: 200, body: vendorBody([entry(requestId)]) }));
    await expectVendorFailure();
    expect(vendor.calls).toHaveLength(1);
  });

  it('a refused connection throws', async () => {
    const closed = await startFakeVendor();
    const url = closed.url;
    await closed.close();
    await expectVendorFailure({ url });
  });

  it('the safety timeout aborts a hung call, once', async () => {
    vendor.setMode('slow');
    vendor.setDelay(2_000);
    const logged = await expectVendorFailure({ fetchTimeoutMs: 100 });
    expect(logged).toContain('TimeoutError');
    expect(vendor.calls).toHaveLength(1);
  });
});

describe("a list's group: up to 100 traces in one vendor call", () => {
  /** `count` requests for different addresses (house numbers 1..count). */
  const requests = (count: number): TraceRequest[] =>
    Array.from({ length: count }, (_, i) => ({
      requestId: randomUUID(),
      address: standardizeAddress({ line1: `${i + 1} Main Street`, city: 'Austin', state: 'TX', zip: '78701' }),
      actor: null,
    }));
  const settle = (group: ReturnType<NonNullable<ReturnType<typeof provider>['group']>>, batch: TraceRequest[]) =>
    Promise.allSettled(batch.map((r) => group.trace(r)));

  it('sends concurrent traces as one call, one entry each, and matches results by requestId, not by position', async () => {
    // Answers in reverse order, each entry naming its house number, so a match by position would mix them up.
    vendor.respondWith((_first, body) => ({
      status: 200,
      body: vendorBody(
        [...body.requests]
          .reverse()
          .map((r: any) => vendorEntry(r.requestId, [{ name: { first: r.propertyAddress.street.split(' ')[0] } }])),
      ),
    }));
    const batch = requests(5);
    const results = await settle(provider().group!(), batch);
    expect(vendor.calls).toHaveLength(1);
    expect(vendor.calls[0].body.requests.map((r: any) => r.requestId)).toEqual(batch.map((r) => r.requestId));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.persons[0].firstName : 'failed'))).toEqual(['1', '2', '3', '4', '5']);
    expect(logs.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('fails only the request the vendor could not resolve, or answered without its requestId', async () => {
    const batch = requests(4);
    vendor.respondEach((r) => {
      if (r.requestId === batch[1].requestId) return {};
      const unknown = r.requestId === batch[2].requestId;
      return { entry: vendorEntry(r.requestId, [], unknown ? { matched: false, error: true, errorCode: 'address_not_found' } : undefined) };
    });
    const results = await settle(provider().group!(), batch);
    expect(vendor.calls).toHaveLength(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe(VENDOR_FAILURE_MESSAGE);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(UnresolvableAddressError);
    expect((results[0] as PromiseFulfilledResult<{ status: string }>).value.status).toBe('no_records_found');
  });

  it('a failed call fails each of its traces, and is never retried', async () => {
    vendor.setMode('failing');
    const results = await settle(provider().group!(), requests(3));
    expect(results.every((r) => r.status === 'rejected' && r.reason.message === VENDOR_FAILURE_MESSAGE)).toBe(true);
    expect(vendor.calls).toHaveLength(1);
    expect(logs.filter((l) => l.level === 'error')).toHaveLength(1);
  });

  it('holds at most 100 requests per call: 150 concurrent traces are two calls', async () => {
    const results = await settle(provider().group!(), requests(150));
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(vendor.calls.map((c) => c.body.requests.length).sort((a, b) => a - b)).toEqual([50, 100]);
  });

  it("a single trace stays a call of its own, and two lists' groups never share a call", async () => {
    const http = provider();
    await Promise.all([http.trace(requests(1)[0]), http.trace(requests(1)[0])]);
    await Promise.all([settle(http.group!(), requests(2)), settle(http.group!(), requests(2))]);
    expect(vendor.calls.map((c) => c.body.requests.length)).toEqual([1, 1, 2, 2]);
  });
});
