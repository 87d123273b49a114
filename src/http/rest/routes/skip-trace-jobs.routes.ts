import { parse, type DocumentNode, type GraphQLSchema } from 'graphql';
import { AppError, REPLAYED_HEADER } from '../../../common/errors.js';
import type { OrganizationPrincipal } from '../../../schema/principal.js';
import { withoutProperties, type JsonSchema } from '../../../schema/json-schema.js';
import { listShapeProblems } from '../../../skip-trace/items/item-rules.js';
import { JOB_CSV_DESCRIPTION, MAX_JOB_ITEMS, resultsCsvOf } from '../../../skip-trace/jobs/jobs.service.js';
import { resultsHeader } from '../../../skip-trace/jobs/job-csv.js';
import { TextBody } from '../../server.js';
import { prepareOperation, type RestOperation } from '../operation.js';
import type { RestRoute, RouteReference } from '../rest-route.js';
import { SKIP_TRACE_KEY } from './skip-trace.route.js';
import { LIST_EXAMPLE } from './skip-trace-batch.route.js';

/** A job as its routes answer it (the `SkipTraceJob` type's fields). */
const JOB_FIELDS = `id status createdAt startedAt completedAt counts { total pending recordsFound noRecordsFound failed cancelled charged }
  webhook { url attempts lastStatus lastAttemptAt deliveredAt }`;

const CREATE_DOCUMENT = parse(`mutation createSkipTraceJob($items: [SkipTraceItemInput!], $csv: String, $webhookUrl: String) {
  createSkipTraceJob(items: $items, csv: $csv, webhookUrl: $webhookUrl) { job { id status createdAt counts { total pending recordsFound noRecordsFound failed cancelled charged } } replayed }
}`);
const JOB_DOCUMENT = parse(`query skipTraceJob($id: ID!) { skipTraceJob(id: $id) { ${JOB_FIELDS} } }`);
const JOBS_DOCUMENT = parse(`query skipTraceJobs($cursor: String, $limit: Int) {
  skipTraceJobs(cursor: $cursor, limit: $limit) { jobs { ${JOB_FIELDS} } nextCursor }
}`);
const RESULTS_DOCUMENT = parse(`query skipTraceJobResults($id: ID!, $cursor: String, $limit: Int) {
  skipTraceJobResults(id: $id, cursor: $cursor, limit: $limit) {
    results { index key status id persons { firstName lastName middleName age phones { number type } emails } error { code message details { path message } } }
    nextCursor
  }
}`);
const CANCEL_DOCUMENT = parse(`mutation cancelSkipTraceJob($id: ID!) { cancelSkipTraceJob(id: $id) { ${JOB_FIELDS} } }`);

const JOBS_PATH = '/api/v1/skiptrace/jobs';
/** Bodies up to 5 MiB: 10,000 rows of CSV or JSON. */
const JOB_BODY_LIMIT_BYTES = 5 * 1024 * 1024;

const JOB_ID_PARAMETER = { id: { description: 'The job id (a UUID), as its creation answered it.', schema: { type: 'string' } } };
const QUERY_PATH = (path: string) => path.replace(/^variables\.?/, '') || '(query)';

interface CreatedValue {
  job: { id: string; status: string; createdAt: string; counts: Record<string, number> };
  replayed: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `POST /api/v1/skiptrace/jobs`: JSON `{items, webhookUrl?}` or a CSV upload (`?webhookUrl=`); 202 with the job's location. */
export function createJobRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal, CreatedValue> {
  const operation = prepareOperation(schema, CREATE_DOCUMENT);
  return {
    method: 'POST',
    path: JOBS_PATH,
    summary: `Queues a job of 1 to ${MAX_JOB_ITEMS} items (JSON or CSV); one credit per records_found or no_records_found item.`,
    credential: SKIP_TRACE_KEY,
    idempotencyHeader: 'Idempotency-Key',
    bodyLimit: JOB_BODY_LIMIT_BYTES,
    textBodies: { 'text/csv': { description: JOB_CSV_DESCRIPTION } },
    status: 202,
    toCall(body, url) {
      if (body instanceof TextBody) {
        const { webhookUrl, ...others } = url?.query ?? {};
        const unknown = Object.keys(others);
        if (unknown.length)
          throw new AppError(
            'invalid_request',
            'The query parameters are invalid.',
            unknown.map((path) => ({ path, message: 'is not a known query parameter' })),
          );
        if (webhookUrl !== undefined && typeof webhookUrl !== 'string')
          throw new AppError('invalid_request', 'webhookUrl must be given once.', [{ path: 'webhookUrl', message: 'must be given once' }]);
        return { operation, variables: { csv: body.text, ...(webhookUrl !== undefined && { webhookUrl }) } };
      }
      if (!isObject(body))
        throw new AppError(
          'invalid_request',
          'The body must be a JSON object with items, or CSV (Content-Type: text/csv).',
          listShapeProblems(body, { max: MAX_JOB_ITEMS }),
        );
      return { operation, variables: body };
    },
    // A JSON body's items (a CSV's rows are read by the operation, naming their lines).
    list: { max: MAX_JOB_ITEMS, otherFields: ['webhookUrl'], unless: 'csv' },
    invalid: { message: 'The list is invalid; nothing was queued.' },
    respond: ({ job }) => ({ id: job.id, status: job.status, createdAt: job.createdAt, counts: job.counts }),
    responseHeaders: {
      Location: {
        description: 'The job: GET it for its status.',
        schema: { type: 'string' },
        value: ({ job }) => `${JOBS_PATH}/${job.id}`,
      },
      [REPLAYED_HEADER]: {
        description: 'true when an earlier request with the same Idempotency-Key created the job (nothing was queued now).',
        schema: { const: 'true' },
        value: ({ replayed }) => (replayed ? 'true' : undefined),
      },
    },
    reference: createJobReference(operation),
  };
}

/** What the API reference says of job creation: both bodies, the webhookUrl parameter, the 202's body. */
const createJobReference = (operation: RestOperation): RouteReference => ({
  description: `The items as JSON, or as CSV (\`Content-Type: text/csv\`, body up to 5 MiB, with \`webhookUrl\` as a query parameter). ${JOB_CSV_DESCRIPTION} A malformed body (bad JSON or CSV, a missing line1/city/state/zip column, more than ${MAX_JOB_ITEMS} items, a duplicate key) is 422 naming the item or line, and nothing is queued; an item breaking a rule of its own fails alone. Counts once against the key's window.`,
  body: withoutProperties(inputBodySchemaOf(operation), ['csv']),
  query: { type: 'object', properties: { webhookUrl: { type: 'string', description: 'CSV uploads: the webhook URL.' } } },
  response: createdResponse(operation),
  errors: ['feature_unavailable', 'insufficient_credits'],
  examples: { items: LIST_EXAMPLE },
});

/** The mutation's variables as the JSON body's schema. */
function inputBodySchemaOf(operation: RestOperation): JsonSchema {
  const { $schema, $defs, properties } = operation.variables.schema as { $schema: string; $defs?: JsonSchema; properties: JsonSchema };
  return { $schema, ...($defs && { $defs }), type: 'object', additionalProperties: false, required: ['items'], properties };
}

/** The 202 body: the job's id, status, createdAt and counts. */
function createdResponse(operation: RestOperation): JsonSchema {
  const result = operation.result as JsonSchema & { properties: { job: JsonSchema } };
  const { $schema, $defs } = result as { $schema?: string; $defs?: JsonSchema };
  return { ...($schema && { $schema }), ...($defs && { $defs }), ...(result.properties.job as JsonSchema) };
}

/** A GET route of one query whose path names the job: `:id`, with the query parameters as the other variables. */
function jobQueryRoute(
  schema: GraphQLSchema,
  declaration: { path: string; summary: string; description: string; document: DocumentNode },
): RestRoute<OrganizationPrincipal> {
  const operation = prepareOperation(schema, declaration.document);
  const byId = declaration.path.includes(':id');
  return {
    method: 'GET',
    path: declaration.path,
    summary: declaration.summary,
    credential: SKIP_TRACE_KEY,
    query: withoutProperties(operation.variables.schema, ['id']),
    ...(byId && { pathParameters: JOB_ID_PARAMETER }),
    toCall: (query, url) => ({ operation, variables: { ...(query as Record<string, unknown>), ...(byId && { id: url?.params.id }) } }),
    invalid: { message: 'The query parameters are invalid.', path: QUERY_PATH },
    respond: (value) => value,
    reference: { description: declaration.description, response: operation.result, ...(byId && { errors: ['not_found'] }) },
  };
}

/** `GET /api/v1/skiptrace/jobs/{id}`. */
export const jobRoute = (schema: GraphQLSchema) =>
  jobQueryRoute(schema, {
    path: `${JOBS_PATH}/:id`,
    summary: "A job: its status, counts and webhook. Another organization's job, or an unknown id, is 404.",
    description:
      "`{id, status, createdAt, startedAt, completedAt, counts, webhook}`. Another organization's job, or an unknown id: 404 `not_found`.",
    document: JOB_DOCUMENT,
  });

/** `GET /api/v1/skiptrace/jobs?cursor=&limit=`. */
export const jobsRoute = (schema: GraphQLSchema) =>
  jobQueryRoute(schema, {
    path: JOBS_PATH,
    summary: "The organization's jobs, newest first (keyset pages).",
    description: '`{jobs, nextCursor}`; `limit` 1 to 200 (default 50); `nextCursor` is null on the last page.',
    document: JOBS_DOCUMENT,
  });

/** `GET /api/v1/skiptrace/jobs/{id}/results?cursor=&limit=`, or with `Accept: text/csv` the whole job as CSV. */
export function jobResultsRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal> {
  const route = jobQueryRoute(schema, {
    path: `${JOBS_PATH}/:id/results`,
    summary: "A job's item results in index order (pending ones too), as JSON pages or, with Accept: text/csv, the whole job as CSV.",
    description: `\`{results, nextCursor}\` in index order, every item listed (pending ones too), usable while the job runs; \`limit\` 1 to 1000 (default 100). With \`Accept: text/csv\`: the whole job as CSV, streamed, one row per item in index order: the input columns as submitted, then the result's. A JSON job's header: \`${resultsHeader(null).join(',')}\` (a CSV job's starts with its own columns instead of the first ten). Cells are empty where absent.`,
    document: RESULTS_DOCUMENT,
  });
  return {
    ...route,
    download: {
      mediaType: 'text/csv',
      description: 'With `Accept: text/csv`: the whole job as CSV (cursor and limit do not apply).',
      open: (services, request, variables) =>
        resultsCsvOf(services.sql, (request.principal as OrganizationPrincipal).organizationId, String(variables.id)),
    },
  };
}

/** `POST /api/v1/skiptrace/jobs/{id}/cancel`. */
export function cancelJobRoute(schema: GraphQLSchema): RestRoute<OrganizationPrincipal> {
  const operation = prepareOperation(schema, CANCEL_DOCUMENT);
  return {
    method: 'POST',
    path: `${JOBS_PATH}/:id/cancel`,
    summary:
      'Cancels a job: items not yet started become cancelled (not charged); running items finish. A finished job is returned unchanged.',
    credential: SKIP_TRACE_KEY,
    pathParameters: JOB_ID_PARAMETER,
    toCall: (_body, url) => ({ operation, variables: { id: url?.params.id } }),
    invalid: { message: 'The job id is invalid.', path: () => 'id' },
    respond: (value) => value,
    reference: {
      description:
        "The job as it is after the cancel (`status` becomes `cancelled` once no item is running). Another organization's job, or an unknown id: 404 `not_found`.",
      noBody: true,
      response: operation.result,
      errors: ['not_found'],
    },
  };
}
