/**
 * A job's webhook, as the jobs use the webhooks domain: the URL and the organization's secret
 * checked when the job is created, one delivery queued once the job ends (`skiptrace.job.completed`
 * or `skiptrace.job.cancelled`, its data the job), and the delivery's state as the job's `webhook`.
 */
import DataLoader from 'dataloader';
import type { Db } from '../../infra/database/sql.js';
import type { Context, Services } from '../../schema/context.js';
import { enqueueWebhook, ensureWebhookSecret, webhookStateOf, type WebhookState } from '../../webhooks/index.js';
import { endedJobsAwaitingWebhook, markWebhookQueued, type Job } from './jobs.data.js';

export type JobWebhook = WebhookState;

/** Refuses (422, path `webhookUrl`) a URL that may not receive webhooks, or an organization with no secret to sign them. */
export async function checkJobWebhook(services: Services, organizationId: string, url: string): Promise<void> {
  await services.webhookUrls.check(url);
  await ensureWebhookSecret(services.sql, organizationId);
}

/** A job's state before its delivery was queued: the URL, nothing attempted. */
const notYetSent = (url: string): JobWebhook => ({ url, attempts: 0, lastStatus: null, lastAttemptAt: null, deliveredAt: null });

const WEBHOOK_STATE = Symbol('jobWebhookState');

/** The webhook state of the jobs a request reads, in one query. */
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

/** The job as its webhook's `data` carries it: as `GET /api/v1/skiptrace/jobs/{id}` answers it then. */
const jobData = (job: Job) => ({
  id: job.id,
  status: job.status,
  createdAt: job.createdAt.toISOString(),
  startedAt: job.startedAt?.toISOString() ?? null,
  completedAt: job.completedAt?.toISOString() ?? null,
  counts: job.counts,
  webhook: job.webhookUrl ? notYetSent(job.webhookUrl) : null,
});

/**
 * Queues the webhook of each job that ended since the last call (its delivery is idempotent per
 * job and type, so a crash between the two statements queues it once at the next call).
 */
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
