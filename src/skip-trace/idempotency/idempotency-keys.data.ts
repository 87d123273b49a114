/**
 * `skip_trace_idempotency_keys`: one row per (organization, Idempotency-Key). Its first request
 * claims it (a row without an outcome, held by `claim_token` until `lease_expires_at`), then
 * stores its answer there, or releases it (deletes the row) when its answer is not to be kept.
 * Raw SQL: every keyed skip trace runs these statements.
 *
 * A stored 200 also counts its `carriers`: the responses that carried it (its first request's and
 * each replay's) and were not lost. Its charge is refunded only by the statement that takes the
 * last one away, so once any response was written in full the charge is final.
 */
import { raw, sql, type Db, type Statement } from '../../infra/database/sql.js';

/** How long a key and its answer are kept after its first request (README "Idempotency"). */
export const RETENTION = raw(`interval '24 hours'`);

/** A request's hold on its Idempotency-Key while it runs: the claim `token`. */
export interface IdempotencyClaim {
  organizationId: string;
  key: string;
  token: string;
}

/** A key as stored: its body's fingerprint and, once its first request answered, that answer. */
export interface StoredKey<Outcome> {
  fingerprint: string;
  /** Null while the first request is in flight. */
  outcome: Outcome | null;
  /** No answer, and the claim's lease ran out (or its answer was forgotten): the next request claims it. */
  lapsed: boolean;
}

/**
 * Claims `key` for a request: a new key, one whose 24 h are over, or one whose claim's lease ran
 * out (its instance died mid-request) is (re)claimed with `token`. True when this request holds it.
 */
export async function claimKey(db: Db, claim: IdempotencyClaim & { fingerprint: string; leaseMs: number }): Promise<boolean> {
  const rows = await db.rows<{ claim_token: string }>(
    sql`insert into skip_trace_idempotency_keys as k
       (organization_id, idempotency_key, fingerprint, claim_token, lease_expires_at, expires_at)
     values (${claim.organizationId}, ${claim.key}, ${claim.fingerprint}, ${claim.token}, now() + ${claim.leaseMs}::integer * interval '1 millisecond', now() + ${RETENTION})
     on conflict (organization_id, idempotency_key) do update
       set fingerprint = excluded.fingerprint, claim_token = excluded.claim_token, lease_expires_at = excluded.lease_expires_at,
           request_id = null, outcome = null, carriers = 0, created_at = now(), expires_at = excluded.expires_at
       where k.expires_at <= now() or (k.outcome is null and k.lease_expires_at <= now())
     returning claim_token`,
  );
  return rows[0]?.claim_token === claim.token;
}

/**
 * The live (unexpired) row of `key`, or null. When it holds a 200's answer to the same body
 * (`fingerprint`), the caller's response is counted as one more of its carriers by the same
 * statement, so no refund can come between reading the answer and holding it: the refund either
 * ran first (and the answer reads as forgotten) or sees this carrier.
 */
export async function readKeyForReplay<Outcome>(
  db: Db,
  organizationId: string,
  key: string,
  fingerprint: string,
): Promise<StoredKey<Outcome> | null> {
  const [row] = await db.rows<{ fingerprint: string; outcome: Outcome | string | null; lapsed: boolean }>(
    sql`update skip_trace_idempotency_keys set carriers = carriers + (fingerprint = ${fingerprint} and request_id is not null)::integer
      where organization_id = ${organizationId} and idempotency_key = ${key} and expires_at > now()
      returning fingerprint, outcome, (outcome is null and lease_expires_at <= now()) as lapsed`,
  );
  if (!row) return null;
  return {
    fingerprint: row.fingerprint,
    outcome: typeof row.outcome === 'string' ? (JSON.parse(row.outcome) as Outcome) : row.outcome,
    lapsed: row.lapsed,
  };
}

/**
 * Stores the answer of the request holding the claim `token`. False when the claim is no longer
 * this request's (released, or its lease taken over). A 200 stored with `carrier` (the id its
 * response answers with) counts that response as its first carrier, and its replays as more
 * (readKeyForReplay): its charges are refunded only once all were lost (loseCarrierCtes).
 */
export async function storeOutcome(db: Db, claim: IdempotencyClaim, outcome: unknown, carrier?: string): Promise<boolean> {
  const changed = await db.run(
    sql`update skip_trace_idempotency_keys set outcome = ${JSON.stringify(outcome)}::jsonb, request_id = ${carrier ?? null}::uuid, carriers = ${carrier ? 1 : 0}::integer
      where ${claimed(claim)} and outcome is null`,
  );
  return changed === 1;
}

/** The row of the claim `token`. */
const claimed = (claim: IdempotencyClaim) =>
  sql`organization_id = ${claim.organizationId} and idempotency_key = ${claim.key} and claim_token = ${claim.token}`;

/**
 * The claim `token`, locked, as the CTE `claim` of a trace's charge statement (../trace.data.ts):
 * no row once the claim is no longer this request's (released, or its lease taken over), and
 * while the statement runs nobody can release or take it.
 */
export const claimCte = (claim: IdempotencyClaim) =>
  sql`claim as (select from skip_trace_idempotency_keys where ${claimed(claim)} and outcome is null for update)`;

/**
 * Stores the 200 of the request holding the claim (locked by claimCte), as the CTE `stored` of the
 * same statement, only when `source` (a CTE of it) holds a row; the request's own response is its
 * first carrier. `outcome`: an SQL expression of the answer (it may read `source`).
 */
export const storeOutcomeCte = (claim: IdempotencyClaim, requestId: string, outcome: Statement, source: Statement) =>
  sql`stored as (update skip_trace_idempotency_keys set outcome = ${outcome}, request_id = ${requestId}::uuid, carriers = 1 from ${source}
     where ${claimed(claim)})`;

/** Gives up the claim `token` without an answer, so the key's next request runs anew. */
export async function releaseKey(db: Db, claim: IdempotencyClaim): Promise<void> {
  await db.run(sql`delete from skip_trace_idempotency_keys where ${claimed(claim)} and outcome is null`);
}

/**
 * A lost response of request `requestId`'s stored answer, as CTEs of the refund's statement: `lost`
 * takes its carrier away (and holds the key's row: its organization, key, fingerprint and carriers
 * left); the last one also forgets the answer (its lease set to have run out, so the key's next
 * request runs anew) and `forgotten` holds a row. The row lock orders it with a replay.
 */
export const loseCarrierCtes = (requestId: string) => sql`lost as (update skip_trace_idempotency_keys
     set carriers = carriers - 1,
         outcome = case when carriers = 1 then null else outcome end,
         request_id = case when carriers = 1 then null else request_id end,
         lease_expires_at = case when carriers = 1 then '-infinity' else lease_expires_at end
     where request_id = ${requestId}::uuid and carriers > 0 returning organization_id, idempotency_key, fingerprint, carriers),
   forgotten as (select from lost where carriers = 0)`;

/**
 * Deletes up to `batch` keys whose 24 h are over; the number deleted. Rows another instance's
 * sweep is deleting are skipped, so instances sweeping at once never wait on each other.
 */
export async function deleteExpiredKeys(db: Db, batch: number): Promise<number> {
  return db.run(
    sql`delete from skip_trace_idempotency_keys where (organization_id, idempotency_key) in (
       select organization_id, idempotency_key from skip_trace_idempotency_keys
        where expires_at <= now() order by expires_at limit ${batch} for update skip locked)`,
  );
}
