/** Another organization's job is `not_found`, as an unknown id is, so ids reveal nothing. */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AppError, badInput } from '../../common/errors.js';
import { checkListShape, listShapeProblems, type ListItemInput, type ListShape } from '../items/item-rules.js';
import { encodeIndexCursor, keysetPage, pageCursor, pageIndex, pageSize, type KeysetListing } from '../../common/keyset-page.js';
import { isUuid } from '../../common/uuid.js';
import type { Db } from '../../infra/database/sql.js';
import { skipTraceAccount } from '../../billing/skip-trace-account.js';
import type { IdempotencyKey } from '../../schema/context.js';
import type { OrganizationPrincipal } from '../../schema/principal.js';
import { parseJobCsv, resultsCsv } from './job-csv.js';
import {
  cancelJob,
  findJob,
  insertJob,
  itemsFrom,
  jobOfIdempotencyKey,
  listJobs,
  type Job,
  type JobItemRow,
  type NewJobItem,
} from './jobs.data.js';

export const MAX_JOB_ITEMS = 10_000;

/** Shared by the API reference and the schema's descriptions. */
export const JOB_CSV_DESCRIPTION = `CSV: UTF-8 (a BOM allowed), RFC 4180 quoting, a header row, then 1 to ${MAX_JOB_ITEMS} data rows. Columns are matched by name, in any case: key, line1, line2, city, state, zip (line1, city, state and zip required) and, for an actor, actor_type (person or entity), first_name, last_name, actor_name; every other column is kept and returned unchanged in the results CSV.`;

export const JOBS_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;
const JOBS_LISTING: KeysetListing = { size: { name: 'limit', ...JOBS_PAGE_SIZE }, cursor: { name: 'cursor', of: 'listing' } };
const jobsList = (organizationId: string) => `skip-trace-jobs:${organizationId}`;

export const RESULTS_PAGE_SIZE = { default: 100, min: 1, max: 1000 } as const;
const RESULTS_LISTING: KeysetListing = { size: { name: 'limit', ...RESULTS_PAGE_SIZE }, cursor: { name: 'cursor', of: 'job' } };
const resultsList = (jobId: string) => `skip-trace-job-results:${jobId}`;

const CSV_PAGE_ROWS = 500;

export interface JobSubmission {
  items: NewJobItem[];
  columns: string[] | null;
  webhookUrl: string | null;
}

const LIST_SHAPE: ListShape = { max: MAX_JOB_ITEMS };

/** Only the list's shape refuses the job; each item's own rules become its result. */
export function submissionOfItems(items: readonly ListItemInput[], webhookUrl: string | null): JobSubmission {
  checkListShape({ items }, LIST_SHAPE);
  return {
    items: items.map(({ key, address, actor }) => ({ key: key ?? null, input: { address, ...(actor && { actor }) }, cells: null })),
    columns: null,
    webhookUrl,
  };
}

export async function submissionOfCsv(text: string, webhookUrl: string | null): Promise<JobSubmission> {
  const csv = await parseJobCsv(text, MAX_JOB_ITEMS);
  const keys = csv.items.map((item) => (item.key === null ? {} : { key: item.key }));
  const details = listShapeProblems({ items: keys }, LIST_SHAPE).map((detail) => {
    const index = /^items\[(\d+)\]/.exec(detail.path)?.[1];
    return index === undefined
      ? detail
      : {
          path: `line ${csv.lines[Number(index)]}`,
          message: `key ${detail.message.replace(/items\[(\d+)\]/g, (_, i: string) => `line ${csv.lines[Number(i)]}`)}`,
        };
  });
  if (details.length) throw badInput('The CSV is invalid; nothing was queued.', details);
  return { items: csv.items, columns: csv.columns, webhookUrl };
}

/** Before the job is created, so a bad webhook refuses the job rather than failing at its end. */
export type WebhookCheck = (organizationId: string, url: string) => Promise<void>;

export interface CreatedJob {
  job: Job;
  replayed: boolean;
}

const notFound = () => new AppError('not_found', 'No such skip trace job.');

/** A repeat of the same body under the same key within 24 hours returns the first job; another body is 422. */
export async function createJob(
  deps: { db: Db; checkWebhook: WebhookCheck },
  principal: OrganizationPrincipal,
  submission: JobSubmission,
  idempotency?: IdempotencyKey,
): Promise<CreatedJob> {
  const { db } = deps;
  const { organizationId } = principal;
  if (idempotency) {
    const earlier = await earlierJob(db, organizationId, idempotency);
    if (earlier) return earlier;
  }
  skipTraceAccount.ensureCanTrace(await skipTraceAccount.read(db, organizationId));
  if (submission.webhookUrl) await deps.checkWebhook(organizationId, submission.webhookUrl);
  const job = await insertJob(
    db,
    {
      id: randomUUID(),
      organizationId,
      keyId: principal.keyId,
      columns: submission.columns,
      webhookUrl: submission.webhookUrl,
      idempotency: idempotency ? { key: idempotency.key, fingerprint: idempotency.fingerprint } : null,
    },
    submission.items,
  );
  if (job) return { job, replayed: false };
  // Another request with the same key created its job meanwhile.
  const earlier = idempotency && (await earlierJob(db, organizationId, idempotency));
  if (!earlier) throw new Error('The job was neither created nor found by its Idempotency-Key.');
  return earlier;
}

async function earlierJob(db: Db, organizationId: string, idempotency: IdempotencyKey): Promise<CreatedJob | null> {
  const found = await jobOfIdempotencyKey(db, organizationId, idempotency.key);
  if (!found || Date.now() - found.job.createdAt.getTime() >= 24 * 3600_000) return null;
  if (found.fingerprint !== idempotency.fingerprint)
    throw new AppError('idempotency_key_reused', 'This Idempotency-Key was used with a different body.');
  return { job: found.job, replayed: true };
}

export async function getJob(db: Db, organizationId: string, id: string): Promise<Job> {
  const job = isUuid(id) ? await findJob(db, organizationId, id) : null;
  if (!job) throw notFound();
  return job;
}

export async function jobsPage(db: Db, organizationId: string, args: { cursor?: string | null; limit?: number | null }) {
  const size = pageSize(JOBS_LISTING, args.limit);
  const after = pageCursor(JOBS_LISTING, jobsList(organizationId), args.cursor);
  const page = keysetPage(jobsList(organizationId), await listJobs(db, organizationId, after, size + 1), size, (job) => job);
  return { jobs: page.nodes, nextCursor: page.nextCursor };
}

export async function resultsPage(db: Db, organizationId: string, id: string, args: { cursor?: string | null; limit?: number | null }) {
  const job = await getJob(db, organizationId, id);
  const size = pageSize(RESULTS_LISTING, args.limit);
  const from = pageIndex(RESULTS_LISTING, resultsList(job.id), args.cursor);
  const rows = await itemsFrom(db, job.id, from, size + 1);
  const results = rows.slice(0, size);
  const last = results[results.length - 1];
  return { results, nextCursor: rows.length > size && last ? encodeIndexCursor(resultsList(job.id), last.index + 1) : null };
}

/** The 404 comes before the first byte; after it, a page of items at a time bounds memory. */
export async function resultsCsvOf(db: Db, organizationId: string, id: string): Promise<Readable> {
  const job = await getJob(db, organizationId, id);
  async function* pages(): AsyncIterable<JobItemRow[]> {
    for (let from = 0; ;) {
      const page = await itemsFrom(db, job.id, from, CSV_PAGE_ROWS);
      if (page.length) yield page;
      if (page.length < CSV_PAGE_ROWS) return;
      from = page[page.length - 1].index + 1;
    }
  }
  return resultsCsv(job.columns, pages());
}

export async function cancelJobOf(db: Db, organizationId: string, id: string): Promise<Job> {
  const job = isUuid(id) ? await cancelJob(db, organizationId, id) : null;
  if (!job) throw notFound();
  return job;
}
