/**
 * The `http` skip-trace provider: one POST per trace to an upstream vendor speaking BatchData
 * V3's skip-trace shape: `POST {SKIPTRACE_PROVIDER_URL}/property/skip-trace` with
 * `Authorization: Bearer {SKIPTRACE_PROVIDER_KEY}` and `{"requests": [VendorTraceRequest]}`;
 * the answer's results carry each request's `requestId` (the fake vendor in
 * `test/support/fake-vendor.ts` is its executable description).
 *
 * - One vendor call per trace, never retried here: the vendor bills per call, so only a
 *   caller's retry retries. A list's traces (a batch's, a job's) may share a call through the
 *   provider's group: up to VENDOR_MAX_REQUESTS requests, each with its own requestId.
 * - The result is matched to the request by `input.requestId`, never by position.
 * - Every failure (non-200, unparsable or malformed body, missing requestId, a vendor error
 *   other than `address_not_found`, network error) throws an Error with a generic message; the
 *   vendor's status and message go to `log.error` only. The API key and the Authorization
 *   header are never logged.
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
 * Safety net against a hung socket only. It is deliberately far above the trace timeout
 * (`SKIPTRACE_TIMEOUT_MS`, 30 s by default): when the trace timeout fires the service answers
 * 504 but lets this call run on, so that a slow vendor's result still arrives and gets cached
 * for the caller's retry. Cancelling at the trace timeout would pay for a call and throw its
 * result away.
 */
export const DEFAULT_VENDOR_FETCH_TIMEOUT_MS = 120_000;

/** The generic message of every vendor failure; internals stay in the log. */
export const VENDOR_FAILURE_MESSAGE = 'skip trace vendor failed';

export interface HttpProviderLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface HttpProviderOptions {
  /** Vendor base URL (`SKIPTRACE_PROVIDER_URL`); a trailing slash is fine. */
  url: string;
  /** Vendor API key (`SKIPTRACE_PROVIDER_KEY`), sent as `Authorization: Bearer …`. */
  apiKey: string;
  log: HttpProviderLog;
  /** Overall safety timeout of one vendor call; see DEFAULT_VENDOR_FETCH_TIMEOUT_MS. */
  fetchTimeoutMs?: number;
}

/** One entry of the vendor request's `requests` array. */
export interface VendorTraceRequest {
  requestId: string;
  propertyAddress: { street: string; city: string; state: string; zip: string };
  name?: { first?: string; last?: string };
  companyName?: string;
}

/** Traces one vendor call may hold (the vendor's limit). */
export const VENDOR_MAX_REQUESTS = 100;

/**
 * How long a group waits for more of its traces before calling the vendor: a list's items reach
 * the provider a few at a time, each after its own opening read.
 */
const GROUP_WINDOW_MS = 10;

/** Each request's result, or the Error its trace fails with (an UnresolvableAddressError for an unknown address). */
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

/**
 * One vendor call for `requests`, never retried: each request's outcome, matched by requestId. A
 * failure of the whole call (network, status, body) fails every request of it alike.
 */
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
        // No caller signal on purpose: the trace timeout must not cancel the call (see above).
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

/** Each request's outcome from a parsed vendor body; failures logged, each once. */
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

/** The vendor request entry for a trace: the standardized address and, if any, the normalized actor. */
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

/** Vendor phone type → ours: `Mobile` → mobile; `Land Line`/`Landline`/`Residential` → residential; else unknown. */
export function vendorPhoneType(type: unknown): PhoneType {
  if (typeof type !== 'string') return 'unknown';
  const t = type.trim().toLowerCase();
  if (t === 'mobile') return 'mobile';
  if (t === 'land line' || t === 'landline' || t === 'residential') return 'residential';
  return 'unknown';
}

/** Digits only; an 11-digit number loses its leading `1` (US country code). Empty when no digits. */
export function vendorPhoneDigits(number: unknown): string {
  if (typeof number !== 'string' && typeof number !== 'number') return '';
  const digits = String(number).replace(/[^0-9]/gu, '');
  return digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits;
}

// ---------------------------------------------------------------------------------------------
// Response reading. Containers (`result`, `data`, `meta`, `persons`, `phones`, `emails`) of the
// wrong type make the response malformed; odd leaf values (a non-string name part, a phone
// without digits, a non-string email) are dropped or become null.

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
  // Results for none of the call's requests (the others of a group are expected).
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

/** A fetch error for the log: its name, message and cause code; never the request (headers). */
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
