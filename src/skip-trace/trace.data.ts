/**
 * The statements of one skip trace, one round trip each and no unit of work around them: the
 * opening read (the organization's account and the cached result), the charge (the credit, its
 * ledger row, the audit row and the Idempotency-Key's answer: one statement of data-modifying
 * CTEs, hence one transaction, on either database, which keeps charges exact under races), and
 * the refund of a charge whose result no response delivered. Each table's part is a fragment of
 * its owner's module carrying its own values (billing: account, charge, audit; this domain: the
 * cache and the keys); this module only composes them.
 */
import { empty, raw, sql, type Db, type Statement } from '../infra/database/sql.js';
import { accountRow, skipTraceAccount, type AccountRow, type SkipTraceAccount } from '../billing/skip-trace-account.js';
import { chargeCtes, refundCtes } from '../billing/charge.js';
import { auditOfCharge, auditOfRefund, type AuditEntry } from '../billing/audit.js';
import { claimCte, loseCarrierCtes } from './idempotency/idempotency-keys.data.js';
import { refundedItemCte } from './idempotency/keyed-items.data.js';
import { storeResultCte, type IdempotencyClaim } from './idempotency/idempotent-request.js';
import type { TraceResult } from './providers/provider.js';
import { cachedRow, resultCache, type CachedRow } from './result-cache.js';

/** The organization's skip trace account (null for an unknown organization) and the live cached result of `cacheKey`, in one statement. */
export async function openTrace(
  db: Db,
  organizationId: string,
  cacheKey: string,
): Promise<{ account: SkipTraceAccount | null; cached: TraceResult | null }> {
  const [row] = await db.rows<AccountRow & CachedRow>(
    sql`select a.*, r.status, r.persons from (${accountRow(organizationId)}) a left join (${cachedRow(cacheKey)}) r on true`,
  );
  return { account: skipTraceAccount.fromRow(row), cached: resultCache.fromRow(row) };
}

/** What a trace's opening read found: the organization's account and the live cached result. */
export type OpenedTrace = Awaited<ReturnType<typeof openTrace>>;

/** The opening reads of several traces (the items of a job's claimed lease), in one statement; their results in the order given. */
export async function openTraces(db: Db, opens: readonly { organizationId: string; cacheKey: string }[]): Promise<OpenedTrace[]> {
  const keys = JSON.stringify(opens.map((open, i) => ({ i, organization_id: open.organizationId, cache_key: open.cacheKey })));
  const rows = await db.rows<AccountRow & CachedRow & { i: number }>(
    sql`select k.i, a.*, r.status, r.persons from jsonb_to_recordset(${keys}::jsonb) as k(i integer, organization_id uuid, cache_key text)
      left join lateral (${accountRow(raw('k.organization_id'))}) a on true left join lateral (${cachedRow(raw('k.cache_key'))}) r on true
      order by k.i`,
  );
  // An unknown organization's account columns are null, as openTrace finds no row.
  return rows.map((row) => ({
    account: skipTraceAccount.fromRow(row.skip_trace_enabled === null ? undefined : row),
    cached: resultCache.fromRow(row),
  }));
}

/** The response field that carries the balance after the charge, set in the stored answer by the statement. */
const BALANCE_FIELD = 'creditsRemaining';

/** What became of a charge: the balance after it, or why nothing was written. */
export type ChargeOutcome = { creditsRemaining: number } | 'no_credit' | 'claim_lost' | 'guard_failed';

/**
 * What a caller adds to a charge's statement: `ctes`, further CTEs written with it (they may read
 * `charged`, which holds a row only when the credit was taken, and `balance`), and `guard`, a
 * boolean SQL expression the charge also requires (e.g. that the item is still unsettled).
 */
export interface ChargeExtra {
  ctes: Statement;
  guard?: Statement;
}

/** The charge's guard held not: nothing was written (the caller's item was settled elsewhere). */
export class ChargeGuardFailed extends Error {
  constructor() {
    super('The charge was not written: its guard no longer holds.');
  }
}

/**
 * Charges one credit for the trace `audit.id` with its ledger and audit rows and, keyed, stores
 * `answer` (with the balance after the charge) as the key's answer: all or nothing, one statement.
 */
export async function chargeTrace(
  db: Db,
  audit: AuditEntry,
  stored?: { claim: IdempotencyClaim; answer: { [BALANCE_FIELD]: number } },
  extra?: ChargeExtra,
): Promise<ChargeOutcome> {
  const charge = { organizationId: audit.principal.organizationId, requestId: audit.id };
  const ctes = extra ? sql`, ${extra.ctes}` : empty;
  const guard = extra?.guard ? sql`and ${extra.guard}` : empty;
  const guarded = extra?.guard ? sql`, ${extra.guard} as guarded` : empty;
  // Keyed: one row, `claimed` false when the claim was lost. Unkeyed: no row when no credit was left.
  const [row] = await db.rows<{ credits_remaining: number | null; claimed?: boolean; guarded?: boolean }>(
    stored
      ? sql`with ${claimCte(stored.claim)}, ${chargeCtes(charge, sql`and exists (select from claim) ${guard}`)}, ${auditOfCharge(audit)},
          ${storeResultCte(stored.claim, { requestId: audit.id, result: stored.answer, field: BALANCE_FIELD, expression: raw('balance.credits_remaining'), source: raw('balance') })}${ctes}
          select (select credits_remaining from balance) as credits_remaining, exists (select from claim) as claimed${guarded}`
      : extra
        ? sql`with ${chargeCtes(charge, guard)}, ${auditOfCharge(audit)}${ctes} select (select credits_remaining from balance) as credits_remaining${guarded}`
        : sql`with ${chargeCtes(charge)}, ${auditOfCharge(audit)} select credits_remaining from balance`,
  );
  if (row?.claimed === false) return 'claim_lost';
  if (row?.guarded === false) return 'guard_failed';
  if (row?.credits_remaining == null) return 'no_credit';
  return { creditsRemaining: Number(row.credits_remaining) };
}

/** A charged trace whose result a response carried: the charge's request id, and whether an Idempotency-Key stored the result. */
export interface CarriedCharge {
  organizationId: string;
  requestId: string;
  keyed: boolean;
}

/**
 * Undoes `charge` (the credit back, the audit row uncharged with `outcome`, a stored answer or a
 * keyed batch's item row forgotten) once no response carrying its result was delivered: a keyed answer's carriers are its
 * first response and each replay's, so the charge is final once any of them was. At most once; true
 * when undone.
 */
export async function refundUndelivered(db: Db, charge: CarriedCharge, outcome: string): Promise<boolean> {
  const audit = auditOfRefund({ requestId: charge.requestId, outcome });
  const [row] = await db.rows<{ refunded: number }>(
    charge.keyed
      ? sql`with ${loseCarrierCtes(charge.requestId)}, ${refundCtes(charge, sql`and exists (select from forgotten)`)}, ${audit}
          select count(*)::integer as refunded from removed`
      : sql`with ${refundCtes(charge, empty)}, ${audit}, ${refundedItemCte(charge.requestId)} select count(*)::integer as refunded from removed`,
  );
  return Number(row.refunded) > 0;
}
