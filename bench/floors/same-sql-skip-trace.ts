/**
 * The same-SQL floor's skip trace (the cached path), as the service sends it: the key (kept, as the
 * service keeps principals, else looked up), the
 * Redis window, then two statements with bound parameters: the organization's account with the
 * cached result (src/skip-trace/trace.data.ts, openTrace), and the charge with its ledger and
 * audit rows (chargeTrace: data-modifying CTEs from billing/charge.ts and billing/audit.ts, one
 * statement, one transaction). Texts exactly as the service's `sql` tag renders them, whitespace
 * included, checked against PostgreSQL's statement log.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { admitSkipTrace, bound, HttpError, keptKey, skipTraceKeyOf } from '../lib/floor-kit.js';

const OPEN = `select a.*, r.status, r.persons from (select skip_trace_enabled, skip_trace_credits from organizations where id = $1) a left join (select status, persons from skip_trace_results where cache_key = $2 and expires_at > now()) r on true`;

const CHARGE = `with charged as (update organizations set skip_trace_credits = skip_trace_credits - 1 where id = $1 and skip_trace_credits > 0  returning id, skip_trace_credits),
   ledger as (insert into skip_trace_credit_ledger (id, organization_id, kind, amount, request_id)
     select gen_random_uuid(), id, 'charge', -1, $2::uuid from charged),
   balance as (select skip_trace_credits as credits_remaining from charged), audit as (insert into skip_trace_requests (id, organization_id, key_id, cache_key, outcome, cache_hit, charged, duration_ms)
     select $3::uuid, id, $4::uuid, $5, $6, $7::boolean, true, $8::integer from charged) select credits_remaining from balance`;

export function skipTrace(req: IncomingMessage, res: ServerResponse) {
  return admitSkipTrace(
    req,
    res,
    (hash) => keptKey(hash, () => skipTraceKeyOf(hash)),
    async ({ key, cacheKey, requestId, startedAt }) => {
      const { rows } = await bound(OPEN, [key.organization_id, cacheKey]);
      const opened = rows[0];
      if (!opened?.skip_trace_enabled) throw new HttpError(403, 'feature_unavailable');
      if (opened.skip_trace_credits <= 0) throw new HttpError(402, 'insufficient_credits');
      if (!opened.status) throw new HttpError(500, 'not_cached'); // the floor serves the cached path only

      const { rows: charged } = await bound(CHARGE, [
        key.organization_id,
        requestId,
        requestId,
        key.id,
        cacheKey,
        opened.status,
        true,
        Math.round(performance.now() - startedAt),
      ]);
      if (!charged[0]) throw new HttpError(402, 'insufficient_credits');
      res.setHeader('X-Credits-Remaining', charged[0].credits_remaining);
      return { id: requestId, status: opened.status, persons: opened.persons };
    },
  );
}
