import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, type ErrorDetail, type ErrorKind } from '../../common/errors.js';
import type { IdempotencyKey } from '../../schema/context.js';
import { sql, type Db, type Statement } from '../../infra/database/sql.js';
import type { ClientWatch } from '../../infra/client-watch.js';
import { CallerGoneError } from '../../billing/audit.js';
import { claimKey, readKeyForReplay, releaseKey, storeOutcome, storeOutcomeCte, type IdempotencyClaim } from './idempotency-keys.data.js';

/** What a keyed request's answer leaves for its replays: its result, or its error as the caller saw it. */
export type StoredAnswer<Result> =
  { result: Result } | { error: { kind: ErrorKind; message: string; details?: ErrorDetail[]; requestId: string } };

export type { IdempotencyClaim } from './idempotency-keys.data.js';

/** The request that carries an Idempotency-Key, and the id its error body names. */
export interface IdempotentCall {
  idempotencyKey: IdempotencyKey;
  requestId: string;
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
  db: Db,
  organizationId: string,
  idempotency: IdempotencyKey,
  leaseMs: number,
): Promise<{ claim: IdempotencyClaim } | { replay: StoredAnswer<Result> }> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const claim = { organizationId, key: idempotency.key, token: randomUUID() };
    if (await claimKey(db, { ...claim, fingerprint: idempotency.fingerprint, leaseMs })) return { claim };
    // A 200 read here counts the caller's response as one of its carriers (see readKeyForReplay).
    const stored = await readKeyForReplay<StoredAnswer<Result>>(db, organizationId, idempotency.key, idempotency.fingerprint);
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

/** A keyed request's claim while it runs: given up at once if its caller leaves. */
export interface KeyHold {
  claim: IdempotencyClaim;
  /** Ends the claim of a request that failed with `error` (settleFailedClaim). */
  settle(error: unknown): Promise<void>;
  /** Stops watching the caller: the request is over. */
  end(): void;
}

/**
 * The Idempotency-Key step of a keyed request: the key's stored answer to replay, or its claim,
 * held until the request ends. The caller leaving frees the key at once, so its retry need not
 * wait for the trace to end.
 */
export async function holdIdempotencyKey<Result>(
  deps: { db: Db; log: Logger; client: ClientWatch; leaseMs: number },
  organizationId: string,
  call: IdempotentCall,
): Promise<{ hold: KeyHold } | { replay: StoredAnswer<Result> }> {
  const { db, log, client } = deps;
  const begun = await beginIdempotentRequest<Result>(db, organizationId, call.idempotencyKey, deps.leaseMs);
  if ('replay' in begun) return begun;
  const { claim } = begun;
  const logged = (message: string) => (error: unknown) => log.error({ err: error, requestId: call.requestId }, message);
  const release = () => void releaseKey(db, claim).catch(logged('could not release an idempotency key'));
  const hold: KeyHold = {
    claim,
    settle: (error) =>
      settleFailedClaim(db, claim, error, !(error instanceof CallerGoneError), call.requestId).catch(
        logged('could not settle an idempotency key'),
      ),
    end: () => client.signal.removeEventListener('abort', release),
  };
  // A caller gone while the key was being claimed never fires the listener.
  if (client.signal.aborted) {
    const gone = new CallerGoneError();
    await hold.settle(gone);
    throw gone;
  }
  client.signal.addEventListener('abort', release, { once: true });
  return { hold };
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
export async function settleFailedClaim(db: Db, claim: IdempotencyClaim, error: unknown, keep: boolean, requestId: string) {
  if (keep && error instanceof AppError && !NOT_KEPT.has(error.status)) {
    const answer: StoredAnswer<never> = {
      error: { kind: error.kind, message: error.message, ...(error.details?.length ? { details: error.details } : {}), requestId },
    };
    await storeOutcome(db, claim, answer);
  } else {
    await releaseKey(db, claim);
  }
}

/**
 * Stores a 200's answer with its charge, as the CTE `stored` of the charge's statement
 * (../trace.data.ts), after the claim's CTE: `result`, but its `field`, which is set to the SQL
 * `expression` read from `source` (known only once the charge ran).
 */
export function storeResultCte<Result>(
  claim: IdempotencyClaim,
  answer: { requestId: string; result: Result; field: string; expression: Statement; source: Statement },
): Statement {
  const stored = JSON.stringify({ result: answer.result } satisfies StoredAnswer<Result>);
  const outcome = sql`jsonb_set(${stored}::jsonb, ${`{result,${answer.field}}`}::text[], to_jsonb(${answer.expression}))`;
  return storeOutcomeCte(claim, answer.requestId, outcome, answer.source);
}
