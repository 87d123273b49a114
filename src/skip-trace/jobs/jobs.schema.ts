/** The REST routes under `/api/v1/skiptrace/jobs` translate to these fields. */
import { AppError, badInput } from '../../common/errors.js';
import { isUuid } from '../../common/uuid.js';
import { builder } from '../../schema/builder.js';
import { constraints } from '../../schema/constraints.js';
import type { OrganizationContext } from '../../schema/context.js';
import { SkipTraceItemInput, SkipTraceItemResultRef } from '../items/item.schema.js';
import type { ItemResult } from '../items/item-result.js';
import { watchJob } from './job-watch.js';
import { JOB_STATUSES, type Job, type JobCounts, type JobItemRow } from './jobs.data.js';
import {
  cancelJobOf,
  createJob,
  getJob,
  jobsPage,
  JOBS_PAGE_SIZE,
  MAX_JOB_ITEMS,
  resultsPage,
  RESULTS_PAGE_SIZE,
  submissionOfCsv,
  submissionOfItems,
  type CreatedJob,
} from './jobs.service.js';
import { checkJobWebhook, jobWebhookLoader, type JobWebhook } from './job-webhook.js';

const JobStatusEnum = builder.enumType('SkipTraceJobStatus', {
  description: 'queued until an item starts; running; completed once every item settled; cancelled once a cancel left none running.',
  values: JOB_STATUSES,
});

const JobCountsRef = builder.objectRef<JobCounts>('SkipTraceJobCounts').implement({
  description: "The job's items by status; charged is the credits they took (one per records_found or no_records_found).",
  fields: (t) => ({
    total: t.exposeInt('total'),
    pending: t.exposeInt('pending'),
    recordsFound: t.exposeInt('recordsFound'),
    noRecordsFound: t.exposeInt('noRecordsFound'),
    failed: t.exposeInt('failed'),
    cancelled: t.exposeInt('cancelled'),
    charged: t.exposeInt('charged'),
  }),
});

const JobWebhookRef = builder.objectRef<JobWebhook>('SkipTraceJobWebhook').implement({
  description: "The job's webhook: where it is sent when the job ends, and its delivery attempts.",
  fields: (t) => ({
    url: t.exposeString('url'),
    attempts: t.exposeInt('attempts'),
    lastStatus: t.exposeInt('lastStatus', { nullable: true, description: 'The HTTP status of the last attempt; null when none answered.' }),
    lastAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (webhook) => webhook.lastAttemptAt }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, resolve: (webhook) => webhook.deliveredAt }),
  }),
});

export const SkipTraceJobRef = builder.objectRef<Job>('SkipTraceJob').implement({
  description: 'A list of up to 10,000 items traced in the background.',
  fields: (t) => ({
    id: t.exposeID('id'),
    status: t.field({ type: JobStatusEnum, resolve: (job) => job.status }),
    createdAt: t.field({ type: 'DateTime', resolve: (job) => job.createdAt }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (job) => job.startedAt }),
    completedAt: t.field({ type: 'DateTime', nullable: true, resolve: (job) => job.completedAt }),
    counts: t.field({ type: JobCountsRef, resolve: (job) => job.counts }),
    webhook: t.field({
      type: JobWebhookRef,
      nullable: true,
      description: 'Null for a job without webhookUrl.',
      resolve: (job, _args, ctx) => (job.webhookUrl ? jobWebhookLoader(ctx).load(job) : null),
    }),
  }),
});

const JobCreatedRef = builder.objectRef<CreatedJob>('SkipTraceJobCreated').implement({
  fields: (t) => ({
    job: t.field({ type: SkipTraceJobRef, resolve: (created) => created.job }),
    replayed: t.exposeBoolean('replayed', {
      description: 'Whether an earlier request with the same Idempotency-Key created the job (REST only: Idempotent-Replayed: true).',
    }),
  }),
});

const JobPageRef = builder.objectRef<{ jobs: Job[]; nextCursor: string | null }>('SkipTraceJobPage').implement({
  fields: (t) => ({
    jobs: t.field({ type: [SkipTraceJobRef], description: 'Newest first.', resolve: (page) => page.jobs }),
    nextCursor: t.exposeString('nextCursor', { nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
});

const resultOf = (row: JobItemRow): ItemResult =>
  ({ index: row.index, key: row.key, status: row.status, id: row.requestId, persons: row.persons ?? [], error: row.error }) as ItemResult;

const JobResultsRef = builder.objectRef<{ results: JobItemRow[]; nextCursor: string | null }>('SkipTraceJobResults').implement({
  fields: (t) => ({
    results: t.field({
      type: [SkipTraceItemResultRef],
      description: 'In index order, every item listed (pending ones too).',
      resolve: (page) => page.results.map(resultOf),
    }),
    nextCursor: t.exposeString('nextCursor', { nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
});

const callersJob = (ctx: OrganizationContext, id: string | number) => getJob(ctx.db.sql, ctx.principal.organizationId, String(id));

builder.mutationFields((t) => ({
  createSkipTraceJob: t.withAuth({ skipTrace: true }).field({
    type: JobCreatedRef,
    description: `Queues a job of 1 to ${MAX_JOB_ITEMS} items, given as items or as CSV (a header row naming key, line1, line2, city, state, zip, actor_type, first_name, last_name, actor_name, any case; other columns are kept): exactly one of the two. One credit per records_found or no_records_found item.`,
    args: {
      items: t.arg({ type: [SkipTraceItemInput], description: `1 to ${MAX_JOB_ITEMS} items.` }),
      csv: t.arg.string({ description: 'The items as CSV (UTF-8, RFC 4180), with a header row.' }),
      webhookUrl: t.arg.string({
        description: 'Sent a POST when the job ends (Standard Webhooks).',
        ...constraints({ minLength: 1, maxLength: 2048 }),
      }),
    },
    resolve: async (_root, args, ctx) => {
      if ((args.items == null) === (args.csv == null))
        throw badInput('Send the items either as items or as csv.', [
          { path: args.items ? 'csv' : 'items', message: 'exactly one of items and csv' },
        ]);
      const webhookUrl = args.webhookUrl ?? null;
      const submission = args.csv != null ? await submissionOfCsv(args.csv, webhookUrl) : submissionOfItems(args.items ?? [], webhookUrl);
      const created = await createJob(
        { db: ctx.db.sql, checkWebhook: (organizationId, url) => checkJobWebhook(ctx.services, organizationId, url) },
        ctx.principal,
        submission,
        ctx.idempotencyKey,
      );
      if (!created.replayed) ctx.services.jobWorker.wake();
      return created;
    },
  }),
  cancelSkipTraceJob: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceJobRef,
    description:
      'Cancels a job: items not yet started become cancelled (not charged); running items finish. A finished job is returned unchanged.',
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => {
      const job = await cancelJobOf(ctx.db.sql, ctx.principal.organizationId, String(args.id));
      // The cancel may have ended the job: its webhook is due.
      ctx.services.jobWorker.settled();
      return job;
    },
  }),
}));

builder.queryFields((t) => ({
  skipTraceJob: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceJobRef,
    description: "One of the organization's jobs (NOT_FOUND for another organization's or an unknown id).",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => callersJob(ctx, args.id),
  }),
  skipTraceJobs: t.withAuth({ skipTrace: true }).field({
    type: JobPageRef,
    description: "The organization's jobs, newest first (keyset pages).",
    args: {
      cursor: t.arg.string({ description: 'nextCursor of the previous page.' }),
      limit: t.arg.int({
        defaultValue: JOBS_PAGE_SIZE.default,
        description: `Jobs per page, ${JOBS_PAGE_SIZE.min} to ${JOBS_PAGE_SIZE.max}.`,
        ...constraints({ minimum: JOBS_PAGE_SIZE.min, maximum: JOBS_PAGE_SIZE.max }),
      }),
    },
    resolve: (_root, args, ctx) => jobsPage(ctx.db.sql, ctx.principal.organizationId, args),
  }),
  skipTraceJobResults: t.withAuth({ skipTrace: true }).field({
    type: JobResultsRef,
    description: "A page of a job's item results in index order, pending items included; usable while the job runs.",
    args: {
      id: t.arg.id({ required: true }),
      cursor: t.arg.string({ description: 'nextCursor of the previous page.' }),
      limit: t.arg.int({
        defaultValue: RESULTS_PAGE_SIZE.default,
        description: `Results per page, ${RESULTS_PAGE_SIZE.min} to ${RESULTS_PAGE_SIZE.max}.`,
        ...constraints({ minimum: RESULTS_PAGE_SIZE.min, maximum: RESULTS_PAGE_SIZE.max }),
      }),
    },
    resolve: (_root, args, ctx) => resultsPage(ctx.db.sql, ctx.principal.organizationId, String(args.id), args),
  }),
}));

builder.subscriptionFields((t) => ({
  watchSkipTraceJob: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceJobRef,
    description:
      'Sends the job (Server-Sent Events) as it is, then each time its counts change (at most every 250 ms) and when it ends, then completes.',
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_root, args, ctx) => {
      const id = String(args.id);
      if (!isUuid(id)) throw new AppError('not_found', 'No such skip trace job.');
      const job = await callersJob(ctx, id);
      const { keyId, organizationId } = ctx.principal;
      // A skip trace key has no user: its streams count against its key and organization.
      const lease = ctx.services.streams.open({ keyId, userId: `organization:${organizationId}`, organizationId }, ctx.client);
      return watchJob(ctx.db.sql, job, lease);
    },
    resolve: (job) => job,
  }),
}));
