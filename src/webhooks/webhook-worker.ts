import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../infra/config.js';
import type { Db } from '../infra/database/sql.js';
import { startPeriodic } from '../infra/periodic.js';
import { sendWebhook, signedRequest } from './delivery.js';
import { resolveWebhookTarget, WebhookUrlRefusal, type WebhookUrlOptions } from './webhook-url.js';
import { claimDueDeliveries, recordAttempt, releaseClaim, type AttemptOutcome, type ClaimedDelivery } from './webhooks.data.js';

/** The first and its retries. */
export const MAX_WEBHOOK_ATTEMPTS = 8;
const MAX_CONCURRENT_DELIVERIES = 10;
/** A claim outlives its attempt's deadline, resolution included, with room to record it. */
const LEASE_MARGIN_MS = 20_000;

export interface WebhookWorker {
  /** Abandoned attempts' rows are due again at once, for any instance. */
  stop(): Promise<void>;
}

/** Every instance runs one, the embedded process too; claims let them share the table. */
export function startWebhookWorker(db: Db, config: Config['webhooks'], log: Logger, urls: WebhookUrlOptions): WebhookWorker {
  const stopping = new AbortController();
  const retry = { retryBaseMs: config.retryBaseMs, maxAttempts: MAX_WEBHOOK_ATTEMPTS };

  const attempt = async (delivery: ClaimedDelivery, token: string) => {
    const claim = { id: delivery.id, token };
    const signal = AbortSignal.any([AbortSignal.timeout(config.timeoutMs), stopping.signal]);
    const outcome = await attemptDelivery(delivery, urls, signal);
    if (stopping.signal.aborted && !outcome.delivered) return releaseClaim(db, claim);
    await recordAttempt(db, claim, outcome, retry);
    const host = safeHost(delivery.url);
    if (outcome.delivered) log.debug({ webhookId: delivery.id, host, attempt: delivery.attempts }, 'webhook delivered');
    else log.info({ webhookId: delivery.id, host, attempt: delivery.attempts, reason: outcome.error }, 'webhook attempt failed');
  };

  // A slow receiver holds one slot, not the others.
  const inFlight = new Set<Promise<void>>();
  const fill = async () => {
    while (!stopping.signal.aborted && inFlight.size < MAX_CONCURRENT_DELIVERIES) {
      const limit = MAX_CONCURRENT_DELIVERIES - inFlight.size;
      const token = randomUUID();
      const leaseMs = config.timeoutMs + LEASE_MARGIN_MS;
      const claimed = await claimDueDeliveries(db, { token, limit, leaseMs, maxAttempts: MAX_WEBHOOK_ATTEMPTS });
      for (const delivery of claimed) {
        const running: Promise<void> = attempt(delivery, token)
          .catch((error) => log.warn({ err: error, webhookId: delivery.id }, 'could not record a webhook attempt'))
          .finally(() => inFlight.delete(running));
        inFlight.add(running);
      }
      if (claimed.length < limit) break;
    }
  };
  const periodic = startPeriodic(fill, config.pollIntervalMs, (error) =>
    log.warn({ err: error }, 'could not claim webhook deliveries; retrying at the next interval'),
  );
  return {
    async stop() {
      stopping.abort();
      await periodic.stop();
      await Promise.all(inFlight);
    },
  };
}

/** The URL is checked again: its name may resolve elsewhere now. */
async function attemptDelivery(delivery: ClaimedDelivery, check: WebhookUrlOptions, signal: AbortSignal): Promise<AttemptOutcome> {
  if (!delivery.secret) return { status: null, delivered: false, error: 'the organization has no webhook secret' };
  let target;
  try {
    target = await resolveWebhookTarget(delivery.url, check);
  } catch (error) {
    if (error instanceof WebhookUrlRefusal) return { status: null, delivered: false, error: `refused: the URL ${error.message}` };
    throw error;
  }
  return sendWebhook(target, signedRequest(delivery, delivery.secret), signal);
}

/** Path and query may hold the receiver's tokens, so only the host is logged. */
function safeHost(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
