import { parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { OrganizationPrincipal } from '../../../schema/principal.js';
import { prepareOperation } from '../operation.js';
import type { RestRoute } from '../rest-route.js';
import { SKIP_TRACE_KEY } from './skip-trace.route.js';

const ACCOUNT_DOCUMENT = parse(`query skipTraceAccount {
  skipTraceAccount { organizationId skipTraceEnabled credits rateLimitPerMinute maxInFlight }
}`);

const USAGE_DOCUMENT = parse(`query skipTraceUsage($from: DateTime, $to: DateTime, $cursor: String, $limit: Int) {
  skipTraceUsage(from: $from, to: $to, cursor: $cursor, limit: $limit) { requests { id createdAt outcome charged cacheHit batchId jobId key } nextCursor }
}`);

/** A GET route of the skip trace key that runs one query, its query parameters as the variables and its result as the body. */
function skipTraceQueryRoute(
  schema: GraphQLSchema,
  declaration: { path: string; summary: string; description: string; document: DocumentNode },
): RestRoute<OrganizationPrincipal> {
  const operation = prepareOperation(schema, declaration.document);
  return {
    method: 'GET',
    path: declaration.path,
    summary: declaration.summary,
    credential: SKIP_TRACE_KEY,
    query: operation.variables.schema,
    toCall: (query) => ({ operation, variables: query as Record<string, unknown> }),
    invalid: {
      message: 'The query parameters are invalid.',
      // Paths name the query parameters: `limit`, not `variables.limit`.
      path: (path) => path.replace(/^variables\.?/, '') || '(query)',
    },
    respond: (value) => value,
    reference: { description: declaration.description },
  };
}

/** `GET /api/v1/skiptrace/account`: the `skipTraceAccount` query. */
export const skipTraceAccountRoute = (schema: GraphQLSchema) =>
  skipTraceQueryRoute(schema, {
    path: '/api/v1/skiptrace/account',
    summary: "The organization's skip trace account: whether it may trace, its credits, its key's limits. Costs no credit.",
    description:
      "`{organizationId, skipTraceEnabled, credits, rateLimitPerMinute, maxInFlight}` of the key's organization. Counts against the key's rate window; charges nothing.",
    document: ACCOUNT_DOCUMENT,
  });

/** `GET /api/v1/skiptrace/usage?from=&to=&cursor=&limit=`: the `skipTraceUsage` query. */
export const skipTraceUsageRoute = (schema: GraphQLSchema) =>
  skipTraceQueryRoute(schema, {
    path: '/api/v1/skiptrace/usage',
    summary: "The organization's skip trace calls, newest first (keyset pages): outcome, whether charged, cache hit. Costs no credit.",
    description:
      "Every call of the organization that passed the credential check, so each charge can be reconciled by the `id` its response carried. `from` and `to` bound `createdAt` (ISO 8601); `nextCursor` is null on the last page. Counts against the key's rate window; charges nothing.",
    document: USAGE_DOCUMENT,
  });
