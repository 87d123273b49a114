/** With skip-trace-account.ts, the only writer of the balance and the ledger: every change of one is a row of the other. */
import { empty, raw, sql, type Statement } from '../infra/database/sql.js';

/**
 * The conditional update is the guard: of concurrent charges racing for the last credit, exactly one
 * finds a row in `charged`; no row either when `onlyIf` fails.
 */
export function chargeCtes(charge: { organizationId: string; requestId: string }, onlyIf: Statement = empty): Statement {
  return sql`charged as (${takeOneCredit(charge.organizationId, onlyIf)}),
   ledger as (insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id)
     select gen_random_uuid(), id, 'charge', -1, ${charge.requestId}::uuid from charged),
   balance as (select skip_trace_credits as credits_remaining from charged)`;
}

/**
 * Taken at once because a row cannot be updated twice in one statement; the locked balance covers
 * `wanted` (`request_id`, `n` from 1) in order, each `credits_remaining` as if charged one by one.
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

/** At most once: the credit returns only when `removed` deleted the ledger charge. */
export function refundCtes(charge: { organizationId: string; requestId: string }, onlyIf: Statement = empty): Statement {
  return sql`removed as (delete from skip_trace_credit_ledger where request_id = ${charge.requestId}::uuid and kind = 'charge' ${onlyIf} returning id),
   refunded as (${giveOneCredit(charge.organizationId, sql`and exists (select from removed)`)})`;
}

const giveOneCredit = (organizationId: string, onlyIf: Statement) =>
  sql`update organizations set skip_trace_credits = skip_trace_credits + 1 where id = ${organizationId} ${onlyIf}`;
