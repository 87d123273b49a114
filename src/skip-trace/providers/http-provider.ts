/**
 * A vendor speaking BatchData V3's skip-trace shape (test/support/fake-vendor.ts describes it).
 * Never retried here: the vendor bills per call. Failures carry a generic message; the vendor's
 * status goes to the log, the API key never (docs/architecture.md, "The vendor call").
 */
import DataLoader from 'dataloader';
import type { NormalizedActor, StandardAddress } from '../../address/index.js';
import {
  UnresolvableAddressError,
  type PhoneType,
  type SkipTraceProvider,
  type TraceGroup,
  type TraceRequest,
  type TraceResult,
  type TracedPerson,
} from './provider.js';

/**
 * Against a hung socket only; far above the trace timeout, so a call past the 504 still caches its
 * result for the caller's retry instead of being paid for and thrown away.
 */
export const DEFAULT_VENDOR_FETCH_TIMEOUT_MS = 120_000;

/** Internals stay in the log. */
export const VENDOR_FAILURE_MESSAGE = 'skip trace vendor failed';

export interface HttpProviderLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface HttpProviderOptions {
  url: string;
  apiKey: string;
  log: HttpProviderLog;
  fetchTimeoutMs?: number;
}

export interface VendorTraceRequest {
  requestId: string;
  propertyAddress: { street: string; city: string; state: string; zip: string };
  name?: { first?: string; last?: string };
  companyName?: string;
}

/** The vendor's limit. */
export const VENDOR_MAX_REQUESTS = 100;

/** A list's items reach the provider a few at a time, each after its own opening read. */
const GROUP_WINDOW_MS = 10;

type CallOutcome = TraceResult | Error;

export function createHttpProvider(options: HttpProviderOptions): SkipTraceProvider {
  const callVendor = vendorCaller(options);
  return {
    name: 'http',
    async trace(request: TraceRequest): Promise<TraceResult> {
      const [outcome] = await callVendor([request]);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
    // One group per list: its traces asked within the window share one call, up to the vendor's limit.
    group(): TraceGroup {
      const loader = new DataLoader<TraceRequest, TraceResult, TraceRequest>(callVendor, {
        cache: false,
        maxBatchSize: VENDOR_MAX_REQUESTS,
        batchScheduleFn: (callback) => setTimeout(callback, GROUP_WINDOW_MS),
      });
      return { trace: (request) => loader.load(request) };
    },
  };
}

/** Matched by requestId, never by position; a failure of the whole call fails every request alike. */
function vendorCaller(options: HttpProviderOptions) {
  const endpoint = `${options.url.replace(/\/+$/u, '')}/property/skip-trace`;
  const timeoutMs = options.fetchTimeoutMs ?? DEFAULT_VENDOR_FETCH_TIMEOUT_MS;
  const { log } = options;
  return async (requests: readonly TraceRequest[]): Promise<CallOutcome[]> => {
    const ids = requests.map((request) => request.requestId);
    const named = ids.length === 1 ? { requestId: ids[0] } : { requestIds: ids.slice(0, 10), requests: ids.length };
    const failAll = (details: object, msg: string): CallOutcome[] => {
      log.error({ provider: 'http', ...named, ...details }, msg);
      return requests.map(() => new Error(VENDOR_FAILURE_MESSAGE));
    };
    let response: Response;
    let text: string;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { Authorization: `Bearer ${options.apiKey}`, 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ requests: requests.map((request) => vendorRequest(request.requestId, request.address, request.actor)) }),
        // No caller signal: the trace timeout must not cancel a paid call (DEFAULT_VENDOR_FETCH_TIMEOUT_MS).
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (err) {
      return failAll(describeFetchError(err, timeoutMs), 'skip trace vendor call failed');
    }
    if (response.status !== 200)
      return failAll({ status: response.status, vendorMessage: clip(text) }, 'skip trace vendor answered with an error status');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return failAll({ status: response.status, vendorBody: clip(text) }, 'skip trace vendor answered with a body that does not parse');
    }
    return readOutcomes(log, body, ids);
  };
}

function readOutcomes(log: HttpProviderLog, body: unknown, ids: readonly string[]): CallOutcome[] {
  const ours = new Set(ids);
  let othersWarned = false;
  return ids.map((requestId) => {
    const outcome = readResponse(body, requestId, ours);
    if (outcome.kind === 'failure') {
      log.error({ provider: 'http', requestId, ...outcome.details }, outcome.msg);
      return new Error(VENDOR_FAILURE_MESSAGE);
    }
    if (outcome.otherRequestIds > 0 && !othersWarned) {
      othersWarned = true;
      log.warn(
        { provider: 'http', requestId, otherResults: outcome.otherRequestIds },
        'skip trace vendor returned results for other requests',
      );
    }
    return outcome.kind === 'unresolvable' ? new UnresolvableAddressError() : outcome.result;
  });
}

export function vendorRequest(requestId: string, address: StandardAddress, actor: NormalizedActor | null): VendorTraceRequest {
  const entry: VendorTraceRequest = {
    requestId,
    propertyAddress: { street: address.line1, city: address.city, state: address.state, zip: address.zip5 },
  };
  if (actor?.type === 'person') {
    const name: { first?: string; last?: string } = {};
    if (actor.firstName !== null) name.first = actor.firstName;
    if (actor.lastName !== null) name.last = actor.lastName;
    if (name.first !== undefined || name.last !== undefined) entry.name = name;
  } else if (actor?.type === 'entity') {
    entry.companyName = actor.name;
  }
  return entry;
}

export function vendorPhoneType(type: unknown): PhoneType {
  if (typeof type !== 'string') return 'unknown';
  const t = type.trim().toLowerCase();
  if (t === 'mobile') return 'mobile';
  if (t === 'land line' || t === 'landline' || t === 'residential') return 'residential';
  return 'unknown';
}

/** An 11-digit number loses its leading `1` (the US country code). */
export function vendorPhoneDigits(number: unknown): string {
  if (typeof number !== 'string' && typeof number !== 'number') return '';
  const digits = String(number).replace(/[^0-9]/gu, '');
  return digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits;
}

// A container of the wrong type makes the response malformed; an odd leaf value is dropped or null.

type Outcome =
  | { kind: 'result'; result: TraceResult; otherRequestIds: number }
  | { kind: 'unresolvable'; otherRequestIds: number }
  | { kind: 'failure'; details: object; msg: string };

class Malformed extends Error {}

function readResponse(body: unknown, requestId: string, ours: ReadonlySet<string>): Outcome {
  const malformed = (what: string): Outcome => ({
    kind: 'failure',
    details: { problem: what },
    msg: 'skip trace vendor answered with a malformed body',
  });

  if (!isRecord(body)) return malformed('body is not an object');
  if (isRecord(body.status) && typeof body.status.code === 'number' && body.status.code !== 200) {
    return {
      kind: 'failure',
      details: { vendorStatus: body.status.code, vendorMessage: clip(String(body.status.text ?? '')) },
      msg: 'skip trace vendor reported an error status',
    };
  }
  if (!isRecord(body.result) || !Array.isArray(body.result.data)) return malformed('result.data is not an array');

  const data: unknown[] = body.result.data;
  const requestIdOf = (d: unknown) => (isRecord(d) && isRecord(d.input) ? d.input.requestId : undefined);
  const mine = data.filter((d) => requestIdOf(d) === requestId);
  // The group's other requests are expected; anything else is counted for the log.
  const otherRequestIds = data.filter((d) => !ours.has(requestIdOf(d) as string)).length;
  const entry = mine[0];
  if (!isRecord(entry)) {
    return {
      kind: 'failure',
      details: { problem: 'no result for the requestId', results: data.length },
      msg: 'skip trace vendor answered without our requestId',
    };
  }

  const meta = entry.meta;
  if (!isRecord(meta)) return malformed('meta is not an object');
  if (meta.error === true) {
    if (meta.errorCode === 'address_not_found') return { kind: 'unresolvable', otherRequestIds };
    return {
      kind: 'failure',
      details: {
        vendorErrorCode: clip(String(meta.errorCode ?? '')),
        vendorMessage: clip(String(meta.errorMessage ?? meta.message ?? '')),
      },
      msg: 'skip trace vendor reported an error for the request',
    };
  }
  if (meta.matched === false) return { kind: 'result', result: { status: 'no_records_found', persons: [] }, otherRequestIds };
  if (meta.matched !== true) return malformed('meta.matched is not a boolean');

  let persons: TracedPerson[];
  try {
    persons = arrayOf(entry.persons, 'persons').map(toPerson);
  } catch (err) {
    if (err instanceof Malformed) return malformed(err.message);
    throw err;
  }
  return {
    kind: 'result',
    result: { status: persons.length > 0 ? 'records_found' : 'no_records_found', persons },
    otherRequestIds,
  };
}

function toPerson(p: unknown): TracedPerson {
  if (!isRecord(p)) throw new Malformed('a person is not an object');
  if (p.name !== undefined && p.name !== null && !isRecord(p.name)) throw new Malformed('a person name is not an object');
  const name = isRecord(p.name) ? p.name : {};
  const phones: TracedPerson['phones'] = [];
  for (const phone of arrayOf(p.phones, 'phones')) {
    if (!isRecord(phone)) continue;
    const number = vendorPhoneDigits(phone.number);
    if (number !== '') phones.push({ number, type: vendorPhoneType(phone.type) });
  }
  const emails: string[] = [];
  for (const e of arrayOf(p.emails, 'emails')) {
    const email = isRecord(e) ? e.email : undefined;
    if (typeof email === 'string' && email.trim() !== '') emails.push(email.trim());
  }
  return {
    firstName: namePart(name.first),
    lastName: namePart(name.last),
    middleName: namePart(name.middle),
    age: typeof p.age === 'number' && Number.isFinite(p.age) ? p.age : null,
    phones,
    emails,
  };
}

/** A missing (or null) array is empty; anything else that is not an array is malformed. */
function arrayOf(value: unknown, what: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Malformed(`${what} is not an array`);
  return value;
}

function namePart(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Vendor text in logs is bounded. */
function clip(text: string, max = 1000): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Never the request: its headers hold the API key. */
function describeFetchError(err: unknown, timeoutMs: number): object {
  if (!(err instanceof Error)) return { error: String(err) };
  const cause = (err as { cause?: unknown }).cause;
  const causeCode = isRecord(cause) && typeof cause.code === 'string' ? cause.code : undefined;
  const causeMessage = cause instanceof Error ? cause.message : undefined;
  const timedOut = err.name === 'TimeoutError';
  return {
    error: err.name,
    message: err.message,
    ...(causeCode ? { causeCode } : {}),
    ...(causeMessage ? { cause: clip(causeMessage) } : {}),
    ...(timedOut ? { timeoutMs } : {}),
  };
}
