/**
 * `skip_trace_idempotency_keys`: one row per (organization, Idempotency-Key). Its first request
 * claims it (a row without an outcome, held by `claim_token` until `lease_expires_at`), then
 * stores its answer there, or releases it (deletes the row) when its answer is not to be kept.
 * Raw SQL: every keyed skip trace runs these statements.
 */
import type { Sql } from '../../infra/database/sql.js';

/** How long a key and its answer are kept after its first request (README "Idempotency"). */
const RETENTION = `interval '24 hours'`;

/** A key as stored: its body's fingerprint and, once its first request answered, that answer. */
export interface StoredKey<Outcome> {
  fingerprint: string;
  /** Null while the first request is in flight. */
  outcome: Outcome | null;
}

/**
 * Claims `key` for a request: a new key, one whose 24 h are over, or one whose claim's lease ran
 * out (its instance died mid-request) is (re)claimed with `token`. True when this request holds it.
 */
export async function claimKey(
  sql: Sql,
  claim: { organizationId: string; key: string; fingerprint: string; token: string; leaseMs: number },
): Promise<boolean> {
  const rows = await sql.execute<{ claim_token: string }[]>(
    `insert into skip_trace_idempotency_keys as k
       (organization_id, idempotency_key, fingerprint, claim_token, lease_expires_at, expires_at)
     values (?, ?, ?, ?, now() + ?::integer * interval '1 millisecond', now() + ${RETENTION})
     on conflict (organization_id, idempotency_key) do update
       set fingerprint = excluded.fingerprint, claim_token = excluded.claim_token, lease_expires_at = excluded.lease_expires_at,
           request_id = null, outcome = null, created_at = now(), expires_at = excluded.expires_at
       where k.expires_at <= now() or (k.outcome is null and k.lease_expires_at <= now())
     returning claim_token`,
    [claim.organizationId, claim.key, claim.fingerprint, claim.token, claim.leaseMs],
  );
  return rows[0]?.claim_token === claim.token;
}

/** The live (unexpired) row of `key`, or null. */
export async function findKey<Outcome>(sql: Sql, organizationId: string, key: string): Promise<StoredKey<Outcome> | null> {
  const [row] = await sql.execute<{ fingerprint: string; outcome: Outcome | string | null }[]>(
    `select fingerprint, outcome from skip_trace_idempotency_keys where organization_id = ? and idempotency_key = ? and expires_at > now()`,
    [organizationId, key],
  );
  if (!row) return null;
  return { fingerprint: row.fingerprint, outcome: typeof row.outcome === 'string' ? (JSON.parse(row.outcome) as Outcome) : row.outcome };
}

/**
 * Stores the answer of the request holding the claim `token` (in the charge's transaction for a
 * 200). False when the claim is no longer this request's (released, or its lease taken over).
 */
export async function storeOutcome(
  sql: Sql,
  claim: { organizationId: string; key: string; token: string },
  outcome: unknown,
  requestId: string | null,
): Promise<boolean> {
  const result = await sql.execute<{ affectedRows: number }>(
    `update skip_trace_idempotency_keys set outcome = ?::jsonb, request_id = ?
      where organization_id = ? and idempotency_key = ? and claim_token = ? and outcome is null`,
    [JSON.stringify(outcome), requestId, claim.organizationId, claim.key, claim.token],
    'run',
  );
  return result.affectedRows === 1;
}

/**
 * The claim `token`, locked, as the CTE `claim` of a trace's charge statement (../trace.data.ts):
 * no row once the claim is no longer this request's (released, or its lease taken over), and
 * while the statement runs nobody can release or take it. `?`: organization, key, token.
 */
export const CLAIM_CTE = `claim as (select from skip_trace_idempotency_keys
     where organization_id = ? and idempotency_key = ? and claim_token = ? and outcome is null for update)`;

/**
 * Stores the answer of the request holding the claim (locked by CLAIM_CTE), as a CTE of the same
 * statement, only when `charged` holds a row. `outcome`: an SQL expression of the answer (it may
 * read `charged`). `?`: those of `outcome`, then the request id, organization, key, token.
 */
export const storeOutcomeCte = (outcome: string) =>
  `stored as (update skip_trace_idempotency_keys set outcome = ${outcome}, request_id = ?::uuid from charged
     where organization_id = ? and idempotency_key = ? and claim_token = ?)`;

/** Gives up the claim `token` without an answer, so the key's next request runs anew. */
export async function releaseKey(sql: Sql, claim: { organizationId: string; key: string; token: string }): Promise<void> {
  await sql.execute(
    `delete from skip_trace_idempotency_keys where organization_id = ? and idempotency_key = ? and claim_token = ? and outcome is null`,
    [claim.organizationId, claim.key, claim.token],
    'run',
  );
}

/**
 * Forgets the answer that carried request `requestId`'s charge, as a CTE of the refund's one
 * statement (../trace.data.ts): only when `removed` (the ledger charge) holds a row. `?`: the request id.
 */
export const FORGET_ANSWER_OF_REFUND = `forgotten as (delete from skip_trace_idempotency_keys where request_id = ?::uuid and exists (select from removed))`;

/**
 * Deletes up to `batch` keys whose 24 h are over; the number deleted. Rows another instance's
 * sweep is deleting are skipped, so instances sweeping at once never wait on each other.
 */
export async function deleteExpiredKeys(sql: Sql, batch: number): Promise<number> {
  const result = await sql.execute<{ affectedRows: number }>(
    `delete from skip_trace_idempotency_keys where (organization_id, idempotency_key) in (
       select organization_id, idempotency_key from skip_trace_idempotency_keys
        where expires_at <= now() order by expires_at limit ? for update skip locked)`,
    [batch],
    'run',
  );
  return result.affectedRows;
}
