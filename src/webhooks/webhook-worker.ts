import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../infra/config.js';
import type { Db } from '../infra/database/sql.js';
import { startPeriodic } from '../infra/periodic.js';
import { sendWebhook, signedRequest } from './delivery.js';
import { resolveWebhookTarget, WebhookUrlRefusal, type Resolve } from './webhook-url.js';
import { claimDueDeliveries, recordAttempt, releaseClaim, type AttemptOutcome, type ClaimedDelivery } from './webhooks.data.js';

/** Attempts of one delivery, at most (the first and its retries). */
export const MAX_WEBHOOK_ATTEMPTS = 8;
/** Deliveries one instance sends at once. */
const CONCURRENCY = 10;
/** A claim outlives its attempt's deadline (resolution included) with room to record it. */
const LEASE_MARGIN_MS = 20_000;

export interface WebhookWorker {
  /** Stops claiming, abandons attempts under way (their rows are due again at once, for any instance) and waits for them. */
  stop(): Promise<void>;
}

export interface WebhookWorkerOptions {
  /** The resolver each delivery checks its URL with; a test's own in tests. */
  resolve?: Resolve;
}

/**
 * Sends queued webhooks: every `pollIntervalMs` it claims due deliveries (`for update skip
 * locked`, so any number of instances share the table) and makes one attempt of each, checking
 * the URL's addresses again first. Every instance runs one, the embedded process too.
 */
export function startWebhookWorker(db: Db, config: Config['webhooks'], log: Logger, options: WebhookWorkerOptions = {}): WebhookWorker {
  const stopping = new AbortController();
  const retry = { retryBaseMs: config.retryBaseMs, maxAttempts: MAX_WEBHOOK_ATTEMPTS };

  const attempt = async (delivery: ClaimedDelivery, token: string) => {
    const claim = { id: delivery.id, token };
    const signal = AbortSignal.any([AbortSignal.timeout(config.timeoutMs), stopping.signal]);
    const outcome = await attemptDelivery(delivery, { allowPrivate: config.allowPrivate, resolve: options.resolve }, signal);
    if (stopping.signal.aborted && !outcome.delivered) return releaseClaim(db, claim);
    await recordAttempt(db, claim, outcome, retry);
    const host = safeHost(delivery.url);
    if (outcome.delivered) log.debug({ webhookId: delivery.id, host, attempt: delivery.attempts }, 'webhook delivered');
    else log.info({ webhookId: delivery.id, host, attempt: delivery.attempts, reason: outcome.error }, 'webhook attempt failed');
  };

  // Attempts under way on this instance: a slow receiver holds one slot, not the others.
  const inFlight = new Set<Promise<void>>();
  const fill = async () => {
    while (!stopping.signal.aborted && inFlight.size < CONCURRENCY) {
      const limit = CONCURRENCY - inFlight.size;
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

/** One attempt: the URL checked again (its name resolved now), then the signed POST to a checked address. */
async function attemptDelivery(
  delivery: ClaimedDelivery,
  check: { allowPrivate: boolean; resolve?: Resolve },
  signal: AbortSignal,
): Promise<AttemptOutcome> {
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

/** The URL's host only: a logged URL never carries its path or query (they may hold the receiver's tokens). */
function safeHost(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
