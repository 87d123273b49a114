import type { Logger } from 'pino';
import type { Db } from '../infra/database/sql.js';
import type { ClientWatch } from '../infra/client-watch.js';
import { CALLER_GONE } from '../billing/audit.js';
import type { SkipTraceMetrics } from './skip-trace.metrics.js';
import { refundUndelivered, type CarriedCharge } from './trace.data.js';

type RefundDeps = { db: Db; metrics: SkipTraceMetrics; log: Logger };

/** A charge needs a delivered response; another response that delivered the result keeps it. */
export function refundIfUndelivered(deps: RefundDeps & { client: ClientWatch }, charge: CarriedCharge): void {
  deps.client.onUndelivered(() => refundNow(deps, charge));
}

export function refundNow(deps: RefundDeps, charge: CarriedCharge): void {
  refundUndelivered(deps.db, charge, CALLER_GONE).then(
    (refunded) => refunded && deps.metrics.creditsRefunded.inc(),
    (error) => deps.log.error({ err: error, requestId: charge.requestId }, 'could not reverse the charge of an undelivered skip trace'),
  );
}
