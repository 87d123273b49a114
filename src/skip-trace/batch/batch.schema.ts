import { builder } from '../../schema/builder.js';
import { constraints } from '../../schema/constraints.js';
import { SkipTraceItemInput, SkipTraceItemResultRef } from '../items/item.schema.js';
import { traceDeps } from '../skip-trace.service.js';
import { BATCH_MAX_ITEMS, runSkipTraceBatch, type BatchResponse } from './batch.service.js';

const SkipTraceBatchRef = builder.objectRef<BatchResponse>('SkipTraceBatch').implement({
  description: "A synchronous batch's answer: every item's result, in request order.",
  fields: (t) => ({
    id: t.exposeID('id', { description: "The batch id (a new UUID per batch); its items' usage rows name it." }),
    charged: t.exposeInt('charged', { description: 'Credits charged: one per item with records_found or no_records_found.' }),
    results: t.field({ type: [SkipTraceItemResultRef], description: 'One per item, in request order.', resolve: (batch) => batch.results }),
    creditsRemaining: t.exposeInt('creditsRemaining', {
      description: "The organization's balance once the batch's charges were made (REST: the X-Credits-Remaining header).",
    }),
    replayed: t.exposeBoolean('replayed', {
      description:
        'Whether this is the stored answer of an earlier request with the same Idempotency-Key (REST only: Idempotent-Replayed: true); never charged.',
    }),
  }),
});

builder.mutationFields((t) => ({
  skipTraceBatch: t.withAuth({ skipTrace: true }).field({
    type: SkipTraceBatchRef,
    description: `Traces up to ${BATCH_MAX_ITEMS} items at once, each as a single trace: one credit per item with records_found or no_records_found; an item breaking its own rules, or left without credits or time, fails alone and is not charged.`,
    args: {
      items: t.arg({
        type: [SkipTraceItemInput],
        required: true,
        description: `1 to ${BATCH_MAX_ITEMS} items; keys unique within the batch.`,
        ...constraints({ minItems: 1, maxItems: BATCH_MAX_ITEMS }),
      }),
    },
    resolve: (_root, args, ctx) =>
      runSkipTraceBatch(
        {
          ...traceDeps(ctx.services, ctx.client),
          slotHeld: ctx.slotHeld,
          concurrency: ctx.services.config.limits.skipTraceBatchConcurrency,
        },
        ctx.principal,
        args.items,
        ctx.idempotencyKey && { idempotencyKey: ctx.idempotencyKey, requestId: ctx.requestId },
      ),
  }),
}));
