import { AppError } from '../common/errors.js';
import { isUuid } from '../common/uuid.js';
import { builder } from '../schema/builder.js';
import { constraints } from '../schema/constraints.js';
import { skipTraceAccount } from './skip-trace-account.js';
import { listUsage, USAGE_PAGE_SIZE, type UsagePage, type UsageRequest } from './usage.js';

interface AccountView {
  organizationId: string;
  skipTraceEnabled: boolean;
  credits: number;
  rateLimitPerMinute: number;
  maxInFlight: number;
}

const SkipTraceAccountRef = builder.objectRef<AccountView>('SkipTraceAccount').implement({
  description: "The calling organization's skip trace account and the limits of its key.",
  fields: (t) => ({
    organizationId: t.exposeID('organizationId'),
    skipTraceEnabled: t.exposeBoolean('skipTraceEnabled', { description: 'Whether its plan permits skip tracing.' }),
    credits: t.exposeInt('credits', { description: 'The balance: one credit per completed trace (each 200).' }),
    rateLimitPerMinute: t.exposeInt('rateLimitPerMinute', {
      description: 'Requests per minute of the key (skip trace and GraphQL together).',
    }),
    maxInFlight: t.exposeInt('maxInFlight', { description: 'Traces the key may have in flight at once, per instance.' }),
  }),
});

const SkipTraceUsageRequestRef = builder.objectRef<UsageRequest>('SkipTraceUsageRequest').implement({
  description: 'One skip trace call of the organization that passed the credential check and the rate window.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'The call id: the `id` of a 200 answer, the key of its ledger charge.' }),
    createdAt: t.field({ type: 'DateTime', resolve: (request) => request.createdAt }),
    outcome: t.exposeString('outcome', {
      description:
        'records_found or no_records_found for a 200; else the error code (e.g. insufficient_credits, timeout), client_closed (the caller left; not charged) or replayed (an Idempotency-Key replay; not charged).',
    }),
    charged: t.exposeBoolean('charged', { description: 'Whether the call cost a credit.' }),
    cacheHit: t.exposeBoolean('cacheHit', { description: 'Whether a charged trace came from the cache.' }),
    batchId: t.exposeID('batchId', { nullable: true, description: 'The batch this call was an item of; null for a single call.' }),
    jobId: t.exposeID('jobId', { nullable: true, description: 'The job this call was an item of; null for a single call.' }),
    key: t.exposeString('key', {
      nullable: true,
      description: "The item's key, as the caller sent it; null for a single call or an item without one.",
    }),
  }),
});

const SkipTraceUsagePageRef = builder.objectRef<UsagePage>('SkipTraceUsagePage').implement({
  fields: (t) => ({
    requests: t.field({ type: [SkipTraceUsageRequestRef], description: 'Newest first.', resolve: (page) => page.requests }),
    nextCursor: t.exposeString('nextCursor', { nullable: true, description: 'Pass as `cursor` for the next page; null on the last page.' }),
  }),
});

/** Shared by the key's own listing and the platform's, so both page alike. */
const usageArgs = (t: Parameters<Parameters<typeof builder.queryFields>[0]>[0]) => ({
  from: t.arg({ type: 'DateTime', description: 'Calls at or after this instant.' }),
  to: t.arg({ type: 'DateTime', description: 'Calls before this instant.' }),
  cursor: t.arg.string({ description: 'nextCursor of the previous page.' }),
  limit: t.arg.int({
    defaultValue: USAGE_PAGE_SIZE.default,
    description: `Calls per page, ${USAGE_PAGE_SIZE.min} to ${USAGE_PAGE_SIZE.max}.`,
    ...constraints({ minimum: USAGE_PAGE_SIZE.min, maximum: USAGE_PAGE_SIZE.max }),
  }),
});

builder.queryFields((t) => ({
  skipTraceAccount: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceAccountRef,
    description: "The calling skip trace key's organization: whether it may trace, its credits, and its key's limits. Costs no credit.",
    resolve: async (_root, _args, ctx) => {
      const account = await skipTraceAccount.read(ctx.db.sql, ctx.principal.organizationId);
      const { limits } = ctx.services.config;
      return {
        organizationId: ctx.principal.organizationId,
        skipTraceEnabled: account?.enabled ?? false,
        credits: account?.credits ?? 0,
        rateLimitPerMinute: limits.skipTracePerMinute,
        maxInFlight: limits.skipTraceMaxInFlight,
      };
    },
  }),
  skipTraceUsage: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceUsagePageRef,
    description:
      "The organization's skip trace calls, newest first, keyset-paginated: every call that passed the credential check and the rate window, charged or not (a call the window refused writes nothing). Costs no credit.",
    args: usageArgs(t),
    resolve: (_root, args, ctx) => listUsage(ctx.db.sql, ctx.principal.organizationId, args),
  }),
  organizationSkipTraceUsage: t.withAuth({ platform: true }).field({
    type: SkipTraceUsagePageRef,
    description:
      "An organization's skip trace calls, as its skip trace key reads them with skipTraceUsage (its cursors are the same listing's): platform only.",
    args: { organizationId: t.arg.id({ required: true }), ...usageArgs(t) },
    resolve: async (_root, { organizationId, ...args }, ctx) => {
      // An unknown id is a typo to report, not an organization without calls.
      const id = String(organizationId);
      if (!isUuid(id) || !(await skipTraceAccount.read(ctx.db.sql, id))) throw new AppError('not_found', 'No such organization.');
      return listUsage(ctx.db.sql, id, args);
    },
  }),
}));
