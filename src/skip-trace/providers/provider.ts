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
  /** `number` is digits only. */
  phones: Array<{ number: string; type: PhoneType }>;
  emails: string[];
}

export interface TraceResult {
  status: TraceStatus;
  persons: TracedPerson[];
}

export interface TraceRequest {
  /** A UUID naming this provider call (the vendor echoes it back). */
  requestId: string;
  address: StandardAddress;
  actor: NormalizedActor | null;
}

/** The address could not be resolved: the caller gets 422 invalid_request, and is not charged. */
export class UnresolvableAddressError extends Error {
  constructor(message = 'The address could not be resolved to a property.') {
    super(message);
  }
}

/**
 * Where traces come from (`SKIPTRACE_PROVIDER`). A provider resolves or throws: an
 * UnresolvableAddressError for an unknown address, anything else for a failure (500, no charge,
 * nothing cached). It never retries a call on its own. What it reads from (a vendor, the
 * database) it is given when it is created.
 */
export interface SkipTraceProvider {
  readonly name: 'records' | 'http';
  trace(request: TraceRequest): Promise<TraceResult>;
  /**
   * A group for the traces of one list (a batch or a job): traces asked of it at about the same
   * time may share one provider call. Absent: each trace is a call of its own.
   */
  group?(): TraceGroup;
}

/** Traces of one list that may share provider calls (SkipTraceProvider.group). */
export interface TraceGroup {
  trace(request: TraceRequest): Promise<TraceResult>;
}
