import type { NormalizedActor, StandardAddress } from '../../address/index.js';

export const PHONE_TYPES = ['mobile', 'residential', 'unknown'] as const;
export type PhoneType = (typeof PHONE_TYPES)[number];

export const TRACE_STATUSES = ['records_found', 'no_records_found'] as const;
export type TraceStatus = (typeof TRACE_STATUSES)[number];

export interface TracedPerson {
  firstName: string | null;
  lastName: string | null;
  middleName: string | null;
  age: number | null;
  phones: Array<{ number: string; type: PhoneType }>;
  emails: string[];
}

export interface TraceResult {
  status: TraceStatus;
  persons: TracedPerson[];
}

export interface TraceRequest {
  /** The vendor echoes it back, to match results to requests. */
  requestId: string;
  address: StandardAddress;
  actor: NormalizedActor | null;
}

/** A 422, not a failure: the caller is not charged. */
export class UnresolvableAddressError extends Error {
  constructor(message = 'The address could not be resolved to a property.') {
    super(message);
  }
}

/** Never retries on its own: only a caller's retry retries. Any throw but UnresolvableAddressError is a 500, uncharged and uncached. */
export interface SkipTraceProvider {
  readonly name: 'records' | 'http';
  trace(request: TraceRequest): Promise<TraceResult>;
  /** A list's traces asked at about the same time may share one provider call. */
  group?(): TraceGroup;
}

export interface TraceGroup {
  trace(request: TraceRequest): Promise<TraceResult>;
}
