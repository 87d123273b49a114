/**
 * Raw SQL: every keyed skip trace runs these. A stored 200 counts its carriers, and only the loss
 * of the last one refunds it (docs/architecture.md, "Data").
 */
import { raw, sql, type Db, type Statement } from '../../infra/database/sql.js';

/** README "Idempotency". */
export const RETENTION = raw(`interval '24 hours'`);

export interface IdempotencyClaim {
  organizationId: string;
  key: string;
  token: string;
}

export interface StoredKey<Outcome> {
  fingerprint: string;
  outcome: Outcome | null;
  /** The claim's lease ran out (or its answer was forgotten): the next request claims it. */
  lapsed: boolean;
}

/** A lapsed lease means its instance died mid-request, so the key is claimed again. */
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
 * Counts the caller as a carrier in the same statement that reads the answer, so no refund can
 * come between: it either ran first (the answer reads as forgotten) or sees this carrier.
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

/** False when the claim was released or its lease taken over. `carrier`: the response's id, its first carrier. */
export async function storeOutcome(db: Db, claim: IdempotencyClaim, outcome: unknown, carrier?: string): Promise<boolean> {
  const changed = await db.run(
    sql`update skip_trace_idempotency_keys set outcome = ${JSON.stringify(outcome)}::jsonb, request_id = ${carrier ?? null}::uuid, carriers = ${carrier ? 1 : 0}::integer
      where ${claimed(claim)} and outcome is null`,
  );
  return changed === 1;
}

const claimed = (claim: IdempotencyClaim) =>
  sql`organization_id = ${claim.organizationId} and idempotency_key = ${claim.key} and claim_token = ${claim.token}`;

/** Locked, so nobody can release or take the claim while the charge statement runs; no row once it is lost. */
export const claimCte = (claim: IdempotencyClaim) =>
  sql`claim as (select from skip_trace_idempotency_keys where ${claimed(claim)} and outcome is null for update)`;

/** Stores only when `source` holds a row; `outcome` is an SQL expression that may read `source`. */
export const storeOutcomeCte = (claim: IdempotencyClaim, requestId: string, outcome: Statement, source: Statement) =>
  sql`stored as (update skip_trace_idempotency_keys set outcome = ${outcome}, request_id = ${requestId}::uuid, carriers = 1 from ${source}
     where ${claimed(claim)})`;

/** So the key's next request runs anew. */
export async function releaseKey(db: Db, claim: IdempotencyClaim): Promise<void> {
  await db.run(sql`delete from skip_trace_idempotency_keys where ${claimed(claim)} and outcome is null`);
}

/**
 * The last lost carrier forgets the answer (its lease run out, so the next request runs anew) and
 * `forgotten` holds a row. The row lock orders it with a replay.
 */
export const loseCarrierCtes = (requestId: string) => sql`lost as (update skip_trace_idempotency_keys
     set carriers = carriers - 1,
         outcome = case when carriers = 1 then null else outcome end,
         request_id = case when carriers = 1 then null else request_id end,
         lease_expires_at = case when carriers = 1 then '-infinity' else lease_expires_at end
     where request_id = ${requestId}::uuid and carriers > 0 returning organization_id, idempotency_key, fingerprint, carriers),
   forgotten as (select from lost where carriers = 0)`;

/** Skips rows another instance's sweep holds, so sweeps never wait on each other. */
export async function deleteExpiredKeys(db: Db, batch: number): Promise<number> {
  return db.run(
    sql`delete from skip_trace_idempotency_keys where (organization_id, idempotency_key) in (
       select organization_id, idempotency_key from skip_trace_idempotency_keys
        where expires_at <= now() order by expires_at limit ${batch} for update skip locked)`,
  );
}
