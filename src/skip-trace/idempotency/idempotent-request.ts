import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, type ErrorDetail, type ErrorKind } from '../../common/errors.js';
import type { IdempotencyKey } from '../../schema/context.js';
import { sql, type Db, type Statement } from '../../infra/database/sql.js';
import type { ClientWatch } from '../../infra/client-watch.js';
import { CallerGoneError } from '../../billing/audit.js';
import { claimKey, readKeyForReplay, releaseKey, storeOutcome, storeOutcomeCte, type IdempotencyClaim } from './idempotency-keys.data.js';

export type StoredAnswer<Result> =
  { result: Result } | { error: { kind: ErrorKind; message: string; details?: ErrorDetail[]; requestId: string } };

export type { IdempotencyClaim } from './idempotency-keys.data.js';

export interface IdempotentCall {
  idempotencyKey: IdempotencyKey;
  requestId: string;
}

const HEADER = 'Idempotency-Key';
/** Claiming races a release (or an expiry) at most this often before answering `idempotency_key_in_use`. */
const CLAIM_ATTEMPTS = 3;

/** Stripe's model, keys per organization. A 200's replay must report its response's loss as its first request does. */
export async function beginIdempotentRequest<Result>(
  db: Db,
  organizationId: string,
  idempotency: IdempotencyKey,
  leaseMs: number,
): Promise<{ claim: IdempotencyClaim } | { replay: StoredAnswer<Result> }> {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const claim = { organizationId, key: idempotency.key, token: randomUUID() };
    if (await claimKey(db, { ...claim, fingerprint: idempotency.fingerprint, leaseMs })) return { claim };
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

export interface KeyHold {
  claim: IdempotencyClaim;
  settle(error: unknown): Promise<void>;
  end(): void;
}

/** The caller leaving frees the key at once, so its retry need not wait for the trace to end. */
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

export function replayedError(answer: Extract<StoredAnswer<unknown>, { error: unknown }>['error']): AppError {
  return new AppError(answer.kind, answer.message, answer.details, { requestId: answer.requestId });
}

/** README "Idempotency": a retry with the key runs anew after these. */
const NOT_KEPT = new Set([429, 500, 504]);

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

/** `field` is set from `expression` in SQL: its value (the balance) is known only once the charge ran. */
export function storeResultCte<Result>(
  claim: IdempotencyClaim,
  answer: { requestId: string; result: Result; field: string; expression: Statement; source: Statement },
): Statement {
  const stored = JSON.stringify({ result: answer.result } satisfies StoredAnswer<Result>);
  const outcome = sql`jsonb_set(${stored}::jsonb, ${`{result,${answer.field}}`}::text[], to_jsonb(${answer.expression}))`;
  return storeOutcomeCte(claim, answer.requestId, outcome, answer.source);
}
