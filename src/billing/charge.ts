/**
 * A trace's charge and its reversal, as CTEs of the trace's one-statement writes
 * (skip-trace/trace.data.ts composes them). This module and skip-trace-account.ts are the only
 * writers of the balance (`organizations.skip_trace_credits`) and the ledger
 * (`skip_trace_credit_ledger`): every change of one is a row of the other, in the same statement.
 */
import { empty, raw, sql, type Statement } from '../infra/database/sql.js';

/**
 * The charge of one credit for request `requestId`: `charged` holds the organization's row after
 * it (its `id`, read by this domain's audit fragment), or no row when no credit was left or
 * `onlyIf` (a further condition, e.g. `and exists (…)`) failed; `ledger` writes its ledger row;
 * `balance` holds the balance it left (`credits_remaining`). The conditional update is the guard:
 * of concurrent charges racing for the last credit, exactly one finds a row.
 */
export function chargeCtes(charge: { organizationId: string; requestId: string }, onlyIf: Statement = empty): Statement {
  return sql`charged as (${takeOneCredit(charge.organizationId, onlyIf)}),
   ledger as (insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id)
     select gen_random_uuid(), id, 'charge', -1, ${charge.requestId}::uuid from charged),
   balance as (select skip_trace_credits as credits_remaining from charged)`;
}

/**
 * The charges of several requests of one organization, one credit each, in one statement (a row
 * cannot be updated twice in one statement, so the credits are taken at once): `wanted` names a CTE
 * of theirs with `request_id` and `n`, their order from 1. The balance is read on the locked row,
 * then as many as it covers are charged, in that order: `charged` holds those rows of `wanted`
 * with `credits_remaining` (the balance each left, as one charge after another would), and
 * `ledger` writes their ledger rows.
 */
export function chargeEachCtes(organizationId: string, wanted: string): Statement {
  const from = raw(wanted);
  return sql`account as (select id, skip_trace_credits from organizations where id = ${organizationId} for update),
   taken as (update organizations o set skip_trace_credits = o.skip_trace_credits - t.take
     from (select a.id, least(a.skip_trace_credits, (select count(*) from ${from}))::integer as take from account a) t
     where o.id = t.id and t.take > 0 and o.skip_trace_credits >= t.take returning o.id, o.skip_trace_credits, t.take),
   charged as (select w.*, t.skip_trace_credits + t.take - w.n as credits_remaining from ${from} w join taken t on w.n <= t.take),
   ledger as (insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id)
     select gen_random_uuid(), ${organizationId}::uuid, 'charge', -1, request_id from charged)`;
}

const takeOneCredit = (organizationId: string, onlyIf: Statement) =>
  sql`update organizations set skip_trace_credits = skip_trace_credits - 1 where id = ${organizationId} and skip_trace_credits > 0 ${onlyIf} returning id, skip_trace_credits`;

/**
 * The reversal of request `requestId`'s charge: `removed` deletes its ledger charge (no row when
 * there is none: never made, or already refunded, so a charge is refunded at most once; nor when
 * `onlyIf` fails), and only then is the credit returned.
 */
export function refundCtes(charge: { organizationId: string; requestId: string }, onlyIf: Statement = empty): Statement {
  return sql`removed as (delete from skip_trace_credit_ledger where request_id = ${charge.requestId}::uuid and kind = 'charge' ${onlyIf} returning id),
   refunded as (${giveOneCredit(charge.organizationId, sql`and exists (select from removed)`)})`;
}

const giveOneCredit = (organizationId: string, onlyIf: Statement) =>
  sql`update organizations set skip_trace_credits = skip_trace_credits + 1 where id = ${organizationId} ${onlyIf}`;
