import { AppError, MASKED_MESSAGE, type ErrorDetail } from '../../common/errors.js';
import type { TracedPerson, TraceStatus } from '../providers/provider.js';

/** What became of an item: traced (charged), failed (not charged), or not run yet or ever (a job's). */
export const ITEM_STATUSES = ['records_found', 'no_records_found', 'failed', 'pending', 'cancelled'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

/** Why an item failed; anything else an item meets is `internal_error`. */
export const ITEM_ERROR_CODES = ['invalid_request', 'insufficient_credits', 'timeout', 'internal_error'] as const;
export type ItemErrorCode = (typeof ITEM_ERROR_CODES)[number];

export interface ItemError {
  code: ItemErrorCode;
  message: string;
  details?: ErrorDetail[];
}

/** An item's result, as a batch answers it and a job lists it. */
export interface ItemResult {
  /** Its position in the list, from 0. */
  index: number;
  key: string | null;
  status: ItemStatus;
  /** The id of its trace request (its usage row, and its ledger charge when charged); null until it ran. */
  id: string | null;
  /** Empty unless records were found. */
  persons: TracedPerson[];
  error: ItemError | null;
}

/** The result of an item its trace answered (and charged). */
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

/** The failure of an item whose trace `id` ended with `error`: its code and message as a single call's, or masked. */
export function failedItem(index: number, key: string | null, id: string | null, error: unknown): ItemResult {
  const known = error instanceof AppError && ITEM_ERRORS.has(error.kind) && error.kind !== 'internal_error';
  const itemError: ItemError = known
    ? { code: error.kind as ItemErrorCode, message: error.message, ...(error.details?.length ? { details: error.details } : {}) }
    : { code: 'internal_error', message: MASKED_MESSAGE };
  return { index, key, status: 'failed', id, persons: [], error: itemError };
}
