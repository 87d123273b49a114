import { parse, type GraphQLSchema } from 'graphql';
import { randomUUID } from 'node:crypto';
import { AppError } from '../../../common/errors.js';
import type { OrganizationPrincipal } from '../../../graphql/principal.js';
import { recordAudit } from '../../../skip-trace/audit.js';
import { inputBodySchema, prepareOperation, type RestRoute } from '../rest-route.js';

/** The route is this one mutation: the body is its `input`. */
const SKIP_TRACE_DOCUMENT = parse(`mutation skipTrace($input: SkipTraceInput!) {
  skipTrace(input: $input) { id status persons { firstName lastName middleName age phones { number type } emails } }
}`);

/** `POST /api/v1/skiptrace`: the `skipTrace` mutation, its input as the body and its result as the response. */
export function skipTraceRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal> {
  const operation = prepareOperation(schema, SKIP_TRACE_DOCUMENT);
  return {
    method: 'POST',
    path: '/api/v1/skiptrace',
    summary: 'Traces the owners of a street address (optionally one person or entity); one credit per 200.',
    credential: { name: 'skip trace key', accepts: (principal): principal is OrganizationPrincipal => principal.type === 'organization' },
    // Before the body is read: a body that never arrives holds its slot until the body timeout ends it.
    admit: (services, caller, client) => services.skipTraceAdmission.admit(caller.keyId, client),
    toCall(body) {
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new AppError('invalid_request', 'The body must be a JSON object with an address.');
      return { operation, variables: { input: body } };
    },
    // Paths name fields of the body: `address.zip`, not `variables.input.address.zip`.
    detailPath: (path) => path.replace(/^variables\.input\.?/, '') || '(body)',
    invalidMessage: 'The skip trace request is invalid.',
    respond: (value) => value,
    reference: {
      description:
        'Exactly one credit is charged per 200; no error is charged. A repeat within the cache TTL is served from the cache (new `id`, still one credit).',
      body: inputBodySchema(operation, 'input'),
      response: operation.result,
      errors: ['feature_unavailable', 'insufficient_credits', 'timeout'],
    },
    // The mutation audits every call it runs; refusals before it (rate, concurrency, body) are audited here.
    onRefused: (services, { caller, kind, startedAt }) => {
      services.skipTraceMetrics.outcomes.inc({ outcome: kind });
      return recordAudit(services.sql, {
        id: randomUUID(),
        principal: caller,
        startedAt,
        outcome: kind,
        cacheKey: null,
        cacheHit: false,
        charged: false,
      });
    },
  };
}
