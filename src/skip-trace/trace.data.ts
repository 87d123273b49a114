/**
 * The statements of one skip trace, one round trip each and no unit of work around them (raw SQL
 * on the `Sql` layer): the opening read (the organization's account and the cached result), the
 * charge (the credit, its ledger row, the audit row and the Idempotency-Key's answer: one
 * statement, hence one transaction, on either database), and the refund of a charge whose
 * result no response delivered. Each table's part is its own module's (the account, the cache,
 * the audit, the keys); this module composes them, and the `?`s follow the parts' order.
 */
import type { Sql } from '../infra/database/sql.js';
import { ACCOUNT_ROW, chargeCtes, refundCtes, skipTraceAccount, type SkipTraceAccount } from '../billing/skip-trace-account.js';
import { AUDIT_OF_CHARGE, AUDIT_OF_REFUND, auditOfChargeParams, type AuditEntry } from '../billing/audit.js';
import { CLAIM_CTE, LOSE_CARRIER_CTES } from './idempotency/idempotency-keys.data.js';
import { claimParams, storeResultCte, storeResultParams, type IdempotencyClaim } from './idempotency/idempotent-request.js';
import type { TraceResult } from './providers/provider.js';
import { CACHED_ROW, resultCache, type CachedRow } from './result-cache.js';

const OPEN = `select a.skip_trace_enabled, a.skip_trace_credits, r.status, r.persons
  from (${ACCOUNT_ROW}) a left join (${CACHED_ROW}) r on true`;

/** The organization's skip trace account (null for an unknown organization) and the live cached result of `cacheKey`, in one statement. */
export async function openTrace(
  sql: Sql,
  organizationId: string,
  cacheKey: string,
): Promise<{ account: SkipTraceAccount | null; cached: TraceResult | null }> {
  const [row] = await sql.execute<({ skip_trace_enabled: boolean; skip_trace_credits: number } & CachedRow)[]>(OPEN, [
    organizationId,
    cacheKey,
  ]);
  return { account: skipTraceAccount.fromRow(row), cached: resultCache.fromRow(row) };
}

/** The response field that carries the balance after the charge, set in the stored answer by the statement. */
const BALANCE_FIELD = 'creditsRemaining';

const CHARGE = `with ${chargeCtes(null)}, ${AUDIT_OF_CHARGE}
  select skip_trace_credits from charged`;
const CHARGE_KEYED = `with ${CLAIM_CTE}, ${chargeCtes('claim')}, ${AUDIT_OF_CHARGE}, ${storeResultCte(BALANCE_FIELD, 'charged.skip_trace_credits')}
  select (select skip_trace_credits from charged), exists (select from claim) as claimed`;

/** What became of a charge: the balance after it, or why nothing was written. */
export type ChargeOutcome = { creditsRemaining: number } | 'no_credit' | 'claim_lost';

/**
 * Charges one credit for the trace `audit.id`, with its ledger row and its audit row (`audit`,
 * charged), and, for a call holding an Idempotency-Key's claim, stores `answer` (its
 * `creditsRemaining` set to the balance after the charge) as the key's answer: all or nothing,
 * in one statement. Nothing is written when no credit is left (`no_credit`) or the claim is no
 * longer this request's (`claim_lost`).
 */
export async function chargeTrace(
  sql: Sql,
  audit: AuditEntry,
  stored?: { claim: IdempotencyClaim; answer: { [BALANCE_FIELD]: number } },
): Promise<ChargeOutcome> {
  const charge = [audit.principal.organizationId, audit.id, ...auditOfChargeParams(audit)];
  // Keyed: one row, `claimed` false when the claim was lost. Unkeyed: no row when no credit was left.
  const [row] = stored
    ? await sql.execute<{ skip_trace_credits: number | null; claimed?: boolean }[]>(CHARGE_KEYED, [
        ...claimParams(stored.claim),
        ...charge,
        ...storeResultParams(stored.claim, stored.answer, audit.id),
      ])
    : await sql.execute<{ skip_trace_credits: number | null; claimed?: boolean }[]>(CHARGE, charge);
  if (row?.claimed === false) return 'claim_lost';
  if (row?.skip_trace_credits == null) return 'no_credit';
  return { creditsRemaining: Number(row.skip_trace_credits) };
}

const REFUND = `with ${refundCtes(null)}, ${AUDIT_OF_REFUND}
  select count(*)::integer as refunded from removed`;
const REFUND_KEYED = `with ${LOSE_CARRIER_CTES}, ${refundCtes('forgotten')}, ${AUDIT_OF_REFUND}
  select count(*)::integer as refunded from removed`;

/** A charged trace whose result a response carried: the charge's request id, and whether an Idempotency-Key stored the result. */
export interface CarriedCharge {
  organizationId: string;
  requestId: string;
  keyed: boolean;
}

/**
 * A response that carried the result of `charge` was not written in full. Unless another response
 * carried that result, one statement undoes the charge: the credit comes back, the audit row says
 * uncharged with `outcome`, and a stored answer is forgotten (the key's next request runs, and is
 * charged, anew). Without a key the trace's own response is the only carrier; with one, the first
 * request's response and each replay's are, and the charge is undone when the last of them is
 * lost, so it is final once any of them was delivered. At most once per charge; true when undone.
 */
export async function refundUndelivered(sql: Sql, charge: CarriedCharge, outcome: string): Promise<boolean> {
  const { organizationId, requestId } = charge;
  const refund = [requestId, organizationId, outcome, requestId];
  const [row] = charge.keyed
    ? await sql.execute<{ refunded: number }[]>(REFUND_KEYED, [requestId, ...refund])
    : await sql.execute<{ refunded: number }[]>(REFUND, refund);
  return Number(row.refunded) > 0;
}
