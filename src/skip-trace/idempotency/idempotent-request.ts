import { randomUUID } from 'node:crypto';
import { AppError, type ErrorDetail, type ErrorKind } from '../../common/errors.js';
import type { IdempotencyKey } from '../../schema/context.js';
import type { Sql } from '../../infra/database/sql.js';
import { claimKey, readKeyForReplay, releaseKey, storeOutcome, storeOutcomeCte } from './idempotency-keys.data.js';

/** What a keyed request's answer leaves for its replays: its result, or its error as the caller saw it. */
export type StoredAnswer<Result> =
  { result: Result } | { error: { kind: ErrorKind; message: string; details?: ErrorDetail[]; requestId: string } };

/** A request's hold on its Idempotency-Key while it runs. */
export interface IdempotencyClaim {
  organizationId: string;
  key: string;
  token: string;
}

/** The header, as `details` paths name it. */
const HEADER = 'Idempotency-Key';
/** Claiming races a release (or an expiry) at most this often before answering `idempotency_key_in_use`. */
const CLAIM_ATTEMPTS = 3;

/**
 * Starts a request that carries an Idempotency-Key (Stripe's model): it claims the key and runs,
 * or gets the stored answer of the key's first request to replay (a 200's replay must report its
 * response's loss, as its first request does: see ../trace.data.ts). The same key with another body
 * is `idempotency_key_reused`; while its first request is still in flight, `idempotency_key_in_use`.
 * Keys are per organization.
 */
export async function beginIdempotentRequest<Result>(
  sql: Sql,
  organizationId: string,
  idempotency: IdempotencyKey,
  leaseMs: number,
): Promise<{ claim: IdempotencyClaim } | { replay: StoredAnswer<Result> }> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const claim = { organizationId, key: idempotency.key, token: randomUUID() };
    if (await claimKey(sql, { ...claim, fingerprint: idempotency.fingerprint, leaseMs })) return { claim };
    // A 200 read here counts the caller's response as one of its carriers (see readKeyForReplay).
    const stored = await readKeyForReplay<StoredAnswer<Result>>(sql, organizationId, idempotency.key, idempotency.fingerprint);
    // Released, expired or forgotten since the claim was refused: claim it again.
    if (!stored || stored.lapsed) continue;
    if (stored.fingerprint !== idempotency.fingerprint)
      throw new AppError('idempotency_key_reused', 'This Idempotency-Key was already used with a different body; use a new key.', [
        { path: HEADER, message: 'was already used with a different body' },
      ]);
    if (stored.outcome === null) break;
    return { replay: stored.outcome };
  }
  throw new AppError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in flight; retry once it has completed.');
}

/** A stored error answer, replayed: same code, message, details and request id, marked as a replay. */
export function replayedError(answer: Extract<StoredAnswer<unknown>, { error: unknown }>['error']): AppError {
  return new AppError(answer.kind, answer.message, answer.details, { requestId: answer.requestId });
}

/** Statuses whose answer is not kept (README "Idempotency"): a retry with the key runs anew. */
const NOT_KEPT = new Set([429, 500, 504]);

/**
 * Ends a claim whose request failed: a kept error (402, 403, 422, …) is stored for replays; any
 * other end (429, 500, 504, the caller gone) releases the key. `requestId` is the one the caller's
 * error body names.
 */
export async function settleFailedClaim(sql: Sql, claim: IdempotencyClaim, error: unknown, keep: boolean, requestId: string) {
  if (keep && error instanceof AppError && !NOT_KEPT.has(error.status)) {
    const answer: StoredAnswer<never> = {
      error: { kind: error.kind, message: error.message, ...(error.details?.length ? { details: error.details } : {}), requestId },
    };
    await storeOutcome(sql, claim, answer, null);
  } else {
    await releaseKey(sql, claim);
  }
}

/**
 * Stores a 200's answer with its charge, as the CTE `stored` of the charge's one statement
 * (../trace.data.ts), after the claim's CTE: the result as storeResultParams gives it, but its
 * `field`, which is set to the SQL `expression` (known only once the charge ran).
 */
export const storeResultCte = (field: string, expression: string) =>
  storeOutcomeCte(`jsonb_set(?::jsonb, '{result,${field}}', to_jsonb(${expression}))`);
export const storeResultParams = <Result>(claim: IdempotencyClaim, result: Result, requestId: string) => [
  JSON.stringify({ result } satisfies StoredAnswer<Result>),
  requestId,
  claim.organizationId,
  claim.key,
  claim.token,
];

/** The claim's `?`s in CLAIM_CTE. */
export const claimParams = (claim: IdempotencyClaim) => [claim.organizationId, claim.key, claim.token];
