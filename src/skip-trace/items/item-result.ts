import { AppError, MASKED_MESSAGE, type ErrorDetail } from '../../common/errors.js';
import type { TracedPerson, TraceStatus } from '../providers/provider.js';

export const ITEM_STATUSES = ['records_found', 'no_records_found', 'failed', 'pending', 'cancelled'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

/** Anything else an item meets is `internal_error`. */
export const ITEM_ERROR_CODES = ['invalid_request', 'insufficient_credits', 'timeout', 'internal_error'] as const;
export type ItemErrorCode = (typeof ITEM_ERROR_CODES)[number];

export interface ItemError {
  code: ItemErrorCode;
  message: string;
  details?: ErrorDetail[];
}

export interface ItemResult {
  index: number;
  key: string | null;
  status: ItemStatus;
  /** Names its usage row and ledger charge. */
  id: string | null;
  persons: TracedPerson[];
  error: ItemError | null;
}

export const tracedItem = (
  index: number,
  key: string | null,
  traced: { id: string; status: TraceStatus; persons: TracedPerson[] },
): ItemResult => ({
  index,
  key,
  status: traced.status,
  id: traced.id,
  persons: traced.persons,
  error: null,
});

const ITEM_ERRORS: ReadonlySet<string> = new Set(ITEM_ERROR_CODES);

/** As a single call's error, or masked where the host would mask it. */
export function failedItem(index: number, key: string | null, id: string | null, error: unknown): ItemResult {
  const known = error instanceof AppError && ITEM_ERRORS.has(error.kind) && error.kind !== 'internal_error';
  const itemError: ItemError = known
    ? { code: error.kind as ItemErrorCode, message: error.message, ...(error.details?.length ? { details: error.details } : {}) }
    : { code: 'internal_error', message: MASKED_MESSAGE };
  return { index, key, status: 'failed', id, persons: [], error: itemError };
}
