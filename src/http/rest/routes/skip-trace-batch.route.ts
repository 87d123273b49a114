import { parse, type GraphQLSchema } from 'graphql';
import { REPLAYED_HEADER } from '../../../common/errors.js';
import type { OrganizationPrincipal } from '../../../schema/principal.js';
import { withoutProperties, type JsonSchema } from '../../../schema/json-schema.js';
import { ITEM_RESULT_FIELDS, restItemResult, restItemResultSchema, type ItemResultValue } from './item-results.js';
import { BATCH_MAX_ITEMS } from '../../../skip-trace/batch/batch.service.js';
import { LIST_INVALID } from '../../../skip-trace/items/item-rules.js';
import { prepareOperation, type RestOperation } from '../operation.js';
import type { RestRoute, RouteReference } from '../rest-route.js';
import { SKIP_TRACE_KEY, skipTraceRoute } from './skip-trace.route.js';

/** Two rows with the caller's keys: the example body of a batch, and of a job sent as JSON. */
export const LIST_EXAMPLE = {
  summary: 'Two rows with their keys',
  value: {
    items: [
      { key: 'crm-1001', address: { line1: '123 Main Street', line2: 'Apt 4', city: 'Austin', state: 'TX', zip: '78701' } },
      {
        key: 'crm-1002',
        address: { line1: '456 Oak Avenue', city: 'Austin', state: 'TX', zip: '78702' },
        actor: { type: 'entity', name: 'Acme Holdings LLC' },
      },
    ],
  },
};

/** The route is this one mutation: the body's `items` are its argument; the billing fields become headers. */
const BATCH_DOCUMENT = parse(`mutation skipTraceBatch($items: [SkipTraceItemInput!]!) {
  skipTraceBatch(items: $items) {
    id charged
    results { ${ITEM_RESULT_FIELDS} }
    creditsRemaining replayed
  }
}`);

/** A list body's limit: a hundred items of the longest addresses and names. */
export const BATCH_BODY_LIMIT_BYTES = 1024 * 1024;

/** The root field's value, as BATCH_DOCUMENT selects it. */
interface BatchValue {
  id: string;
  charged: number;
  results: ItemResultValue[];
  creditsRemaining: number;
  replayed: boolean;
}

/** Selected for the headers, not part of the body. */
const BILLING_FIELDS = ['creditsRemaining', 'replayed'];

/** The response's schema, its results as restItemResult answers them. */
function responseSchema(operation: RestOperation): JsonSchema {
  const derived = withoutProperties(operation.result, BILLING_FIELDS);
  const properties = derived.properties as Record<string, JsonSchema>;
  const results = properties.results;
  return { ...derived, properties: { ...properties, results: { ...results, items: restItemResultSchema(results.items as JsonSchema) } } };
}

const batchReference = (operation: RestOperation): RouteReference => {
  const { $schema, $defs } = operation.variables.schema as { $schema: string; $defs?: Record<string, unknown> };
  return {
    description: `Up to ${BATCH_MAX_ITEMS} items, each traced as \`POST /api/v1/skiptrace\` traces one, answered together in request order. One credit per item with \`records_found\` or \`no_records_found\`; an item that breaks its own rules, finds no credit left (items are served in index order), or is not finished within the trace timeout of the batch's start fails alone and is not charged. The batch takes one in-flight slot and counts once against the key's window. Body limit 1 MiB.`,
    body: {
      $schema,
      ...($defs && { $defs }),
      type: 'object',
      properties: { items: (operation.variables.schema as { properties: Record<string, unknown> }).properties.items },
      required: ['items'],
      additionalProperties: false,
    },
    response: responseSchema(operation),
    errors: ['feature_unavailable', 'insufficient_credits'],
    examples: { list: LIST_EXAMPLE },
  };
};

/** `POST /api/v1/skiptrace/batch`: the `skipTraceBatch` mutation, the body's `items` as its argument and its result as the response. */
export function skipTraceBatchRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal, BatchValue> {
  const operation = prepareOperation(schema, BATCH_DOCUMENT);
  const single = skipTraceRoute(schema);
  return {
    method: 'POST',
    path: '/api/v1/skiptrace/batch',
    summary: `Traces up to ${BATCH_MAX_ITEMS} addresses at once, answered in request order; one credit per item found or with no records.`,
    credential: SKIP_TRACE_KEY,
    bodyLimit: BATCH_BODY_LIMIT_BYTES,
    // One slot for the whole batch, as a single call's, before the body is read.
    holdSlot: single.holdSlot,
    idempotencyHeader: 'Idempotency-Key',
    // The body is the variables: its shape is refused as a whole, every path at once, before anything runs.
    toCall: (body) => ({ operation, variables: body as Record<string, unknown> }),
    list: { max: BATCH_MAX_ITEMS },
    invalid: { message: LIST_INVALID },
    respond: ({ id, charged, results }) => ({ id, charged, results: results.map(restItemResult) }),
    responseHeaders: {
      'X-Credits-Remaining': {
        description: "The organization's balance once the batch's charges were made.",
        schema: { type: 'integer', minimum: 0 },
        value: (batch) => String(batch.creditsRemaining),
      },
      [REPLAYED_HEADER]: {
        description: 'true on the stored answer of an earlier request with the same Idempotency-Key (nothing charged again).',
        schema: { const: 'true' },
        value: (batch) => (batch.replayed ? 'true' : undefined),
      },
    },
    reference: batchReference(operation),
    onRefused: single.onRefused as RestRoute<OrganizationPrincipal, BatchValue>['onRefused'],
  };
}
