/**
 * Each write is one statement of data-modifying CTEs, hence one transaction on either database,
 * which keeps charges exact under races. Only composes the owners' fragments (docs/architecture.md, "Data").
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

export type OpenedTrace = Awaited<ReturnType<typeof openTrace>>;

/** A job's claimed items share one round trip. */
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

/** Set in the stored answer by the statement, as only it knows the balance after the charge. */
const BALANCE_FIELD = 'creditsRemaining';

export type ChargeOutcome = { creditsRemaining: number } | 'no_credit' | 'claim_lost' | 'guard_failed';

/** `ctes` may read `charged` (a row only when the credit was taken) and `balance`; `guard` must also hold to charge. */
export interface ChargeExtra {
  ctes: Statement;
  guard?: Statement;
}

export class ChargeGuardFailed extends Error {
  constructor() {
    super('The charge was not written: its guard no longer holds.');
  }
}

/** All or nothing, one statement: the credit, its ledger and audit rows and, keyed, the key's answer. */
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

export interface CarriedCharge {
  organizationId: string;
  requestId: string;
  keyed: boolean;
}

/** At most once. A keyed charge is final once any of its carriers (first response or a replay) was delivered. */
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
