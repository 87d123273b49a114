import DataLoader from 'dataloader';
import type { Db } from '../../infra/database/sql.js';
import type { Context, Services } from '../../schema/context.js';
import { enqueueWebhook, ensureWebhookSecret, webhookStateOf, type WebhookState } from '../../webhooks/index.js';
import { endedJobsAwaitingWebhook, markWebhookQueued, type Job } from './jobs.data.js';

export type JobWebhook = WebhookState;

/** Checked at creation: a job whose webhook cannot be sent or signed should not start. */
export async function checkJobWebhook(services: Services, organizationId: string, url: string): Promise<void> {
  await services.webhookUrls.check(url);
  await ensureWebhookSecret(services.sql, organizationId);
}

const notYetSent = (url: string): JobWebhook => ({ url, attempts: 0, lastStatus: null, lastAttemptAt: null, deliveredAt: null });

const WEBHOOK_STATE = Symbol('jobWebhookState');

export const jobWebhookLoader = (ctx: Context) =>
  ctx.db.loader(
    WEBHOOK_STATE,
    () =>
      new DataLoader<Job, JobWebhook | null, string>(
        async (jobs) => {
          const states = await webhookStateOf(
            ctx.db.sql,
            jobs.map((job) => job.id),
          );
          return jobs.map((job) => (job.webhookUrl ? (states.get(job.id) ?? notYetSent(job.webhookUrl)) : null));
        },
        { cacheKeyFn: (job) => job.id },
      ),
  );

/** As `GET /api/v1/skiptrace/jobs/{id}` answers it, so both read alike. */
const jobData = (job: Job) => ({
  id: job.id,
  status: job.status,
  createdAt: job.createdAt.toISOString(),
  startedAt: job.startedAt?.toISOString() ?? null,
  completedAt: job.completedAt?.toISOString() ?? null,
  counts: job.counts,
  webhook: job.webhookUrl ? notYetSent(job.webhookUrl) : null,
});

/** A delivery is idempotent per job and type, so a crash between the two statements queues it once next time. */
export async function queueEndedJobWebhooks(db: Db): Promise<void> {
  for (const job of await endedJobsAwaitingWebhook(db)) {
    await enqueueWebhook(db, {
      organizationId: job.organizationId,
      subjectId: job.id,
      url: job.webhookUrl as string,
      type: `skiptrace.job.${job.status}`,
      data: jobData(job),
    });
    await markWebhookQueued(db, job.id);
  }
}
