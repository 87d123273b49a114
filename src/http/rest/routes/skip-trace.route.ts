import { parse, type GraphQLSchema } from 'graphql';
import { randomUUID } from 'node:crypto';
import { AppError, REPLAYED_HEADER } from '../../../common/errors.js';
import type { OrganizationPrincipal } from '../../../schema/principal.js';
import { recordOutcome } from '../../../skip-trace/outcome.js';
import { inputBodySchema, prepareOperation, type RestOperation } from '../operation.js';
import type { RestRoute, RouteReference } from '../rest-route.js';
import { withoutProperties } from '../../../schema/json-schema.js';

/** The route is this one mutation: the body is its `input`; the billing fields become headers. */
const SKIP_TRACE_DOCUMENT = parse(`mutation skipTrace($input: SkipTraceInput!) {
  skipTrace(input: $input) {
    id status persons { firstName lastName middleName age phones { number type } emails }
    creditsRemaining cacheHit replayed
  }
}`);

/** The credential of the skip trace routes: an organization's skip trace key. */
export const SKIP_TRACE_KEY: RestRoute<OrganizationPrincipal>['credential'] = {
  name: 'skip trace key',
  serves: ['organization'],
};

/** Selected for the headers, not part of the body. */
const BILLING_FIELDS = ['creditsRemaining', 'cacheHit', 'replayed'];

/** The root field's value, as SKIP_TRACE_DOCUMENT selects it. */
interface SkipTraceValue {
  id: string;
  status: string;
  persons: unknown[];
  creditsRemaining: number;
  cacheHit: boolean;
  replayed: boolean;
}

/** The billing fields of the root field's value, as the response's headers. */
const BILLING_HEADERS: RestRoute<OrganizationPrincipal, SkipTraceValue>['responseHeaders'] = {
  'X-Credits-Remaining': {
    description: "The organization's balance right after this call's charge.",
    schema: { type: 'integer', minimum: 0 },
    value: (result) => String(result.creditsRemaining),
  },
  'X-Cache': {
    description: 'hit: the result came from the cache; miss: from the provider.',
    schema: { enum: ['hit', 'miss'] },
    value: (result) => (result.cacheHit ? 'hit' : 'miss'),
  },
  [REPLAYED_HEADER]: {
    description: 'true on the stored answer of an earlier request with the same Idempotency-Key (not charged again).',
    schema: { const: 'true' },
    value: (result) => (result.replayed ? 'true' : undefined),
  },
};

/** What the API reference says of the route: its body and response schemas, and example bodies. */
const skipTraceReference = (operation: RestOperation): RouteReference => ({
  description:
    'Exactly one credit is charged per 200; no error is charged. A repeat within the cache TTL is served from the cache (new `id`, still one credit).',
  body: inputBodySchema(operation, 'input'),
  response: withoutProperties(operation.result, BILLING_FIELDS),
  errors: ['feature_unavailable', 'insufficient_credits', 'timeout'],
  // Bodies the service accepts as shown (the embedded demo data holds both properties).
  examples: {
    address: {
      summary: 'An address',
      value: { address: { line1: '123 Main Street', line2: 'Apt 4', city: 'Austin', state: 'TX', zip: '78701' } },
    },
    person: {
      summary: 'An address and one of its owners',
      value: {
        address: { line1: '123 Main St #4', city: 'Austin', state: 'TX', zip: '78701' },
        actor: { type: 'person', firstName: 'Jane', lastName: 'Smith' },
      },
    },
    entity: {
      summary: 'An address and its owning company',
      value: {
        address: { line1: '456 Oak Avenue', city: 'Austin', state: 'TX', zip: '78702' },
        actor: { type: 'entity', name: 'Acme Holdings LLC' },
      },
    },
  },
});

/** `POST /api/v1/skiptrace`: the `skipTrace` mutation, its input as the body and its result as the response. */
export function skipTraceRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal, SkipTraceValue> {
  const operation = prepareOperation(schema, SKIP_TRACE_DOCUMENT);
  return {
    method: 'POST',
    path: '/api/v1/skiptrace',
    summary: 'Traces the owners of a street address (optionally one person or entity); one credit per 200.',
    credential: SKIP_TRACE_KEY,
    // Before the body is read: a body that never arrives holds its slot until the body timeout ends it.
    holdSlot: (services, caller, client) => services.skipTraceAdmission.holdSlot(caller.keyId, client),
    // The mutation claims the key, or replays the key's first answer (skip-trace/idempotency/).
    idempotencyHeader: 'Idempotency-Key',
    toCall(body) {
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new AppError('invalid_request', 'The body must be a JSON object with an address.');
      return { operation, variables: { input: body } };
    },
    invalid: {
      message: 'The skip trace request is invalid.',
      // Paths name fields of the body: `address.zip`, not `variables.input.address.zip`.
      path: (path) => path.replace(/^variables\.input\.?/, '') || '(body)',
    },
    // The body is the API reference's object; the billing fields travel as headers.
    respond: ({ id, status, persons }) => ({ id, status, persons }),
    responseHeaders: BILLING_HEADERS,
    reference: skipTraceReference(operation),
    // The trace audits every call it runs; refusals before it (the slot, the body) are audited here, alike.
    // The rate window's are not: a request it refused writes nothing (rest-route.ts).
    onRefused: (services, { caller, kind, startedAt }) =>
      recordOutcome(
        { db: services.sql, metrics: services.skipTraceMetrics },
        { id: randomUUID(), principal: caller, startedAt, cacheKey: null },
        kind,
      ),
  };
}
