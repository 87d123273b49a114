/**
 * Built from the routes' declarations and the error table, so it cannot drift from them. The dialect
 * is declared once because 2020-12 forbids `$schema` below a root.
 */
import { ERRORS, type ErrorKind } from '../common/errors.js';
import type { Caller } from '../schema/principal.js';
import { JSON_SCHEMA_DIALECT, type JsonSchema } from '../schema/json-schema.js';
import type { RestRoute } from '../http/rest/rest-route.js';
import { IDEMPOTENCY_KEY_HEADER } from '../http/rest/idempotency-key.js';
import type { DocumentedRoute } from '../http/documented-route.js';

const API_VERSION = '1.0.0';

export interface OpenApiSources {
  restRoutes: readonly RestRoute<Caller>[];
  documentedRoutes: readonly DocumentedRoute[];
}

type OpenApiObject = Record<string, unknown>;

/** All bearer schemes: the key's prefix tells them apart. */
const CREDENTIALS: Record<string, { scheme: string; description: string }> = {
  'gateway key': {
    scheme: 'gatewayKey',
    description: 'A gateway key, `gk_…`: the notifications feed (`POST /api/v1/call`) and `/graphql`.',
  },
  'skip trace key': { scheme: 'skipTraceKey', description: "An organization's skip trace key, `stk_…`." },
  'platform token': {
    scheme: 'platformToken',
    description: 'The platform token (`INTERNAL_API_TOKEN`): provisioning on `/graphql` and `/metrics`.',
  },
};
const schemeOf = (credential: string) =>
  CREDENTIALS[credential]?.scheme ??
  credential.replace(/[^A-Za-z0-9]+(.)?/g, (_separator, next: string | undefined) => (next ?? '').toUpperCase());

/** A row without a meaning is described by its code. */
const MEANINGS: Partial<Record<ErrorKind, string>> = {
  invalid_key: 'credential missing, malformed, unknown or revoked',
  insufficient_credits: "the organization's balance is zero",
  insufficient_scope: "the key lacks the operation's scope",
  feature_unavailable: 'skip tracing is disabled for the organization',
  unknown_operation: 'no such operationId',
  not_found: 'no such route (a path that does not decode, or a segment over-long, included)',
  method_not_allowed: 'wrong method on a known route',
  request_timeout: 'the headers and body did not arrive within `REQUEST_BODY_TIMEOUT_MS`',
  payload_too_large: 'body over 64 KiB, or headers too large',
  unsupported_media_type: 'a `Content-Type` other than `application/json`',
  invalid_request: 'body not a JSON object, wrong types, unknown fields, out-of-range values, a malformed HTTP request',
  rate_limited: 'over the rate window; see `Retry-After`',
  concurrency_limit:
    'too many requests in flight for the key (for marks: waiting for the user), or too many open streams (per key, user, organization or server) on this instance; `Retry-After: 1`',
  internal_error: 'unexpected; the message never carries internals',
  timeout: 'not finished in time; retry',
};

/** The HTTP host's own, possible on any route. */
const HOST_ERRORS: readonly ErrorKind[] = ['invalid_request', 'request_timeout', 'payload_too_large', 'internal_error'];
const REST_ERRORS: readonly ErrorKind[] = ['invalid_key', 'rate_limited', 'unsupported_media_type'];

const ERROR_BODY: JsonSchema = {
  type: 'object',
  description: 'Every error of the service: `{"error": {code, message, details?}}`.',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERRORS) },
        message: { type: 'string' },
        details: {
          type: 'array',
          description: 'For validation failures: one entry per failing path.',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['path', 'message'],
            properties: { path: { type: 'string', examples: ['address.zip'] }, message: { type: 'string' } },
          },
        },
        requestId: { type: 'string', description: 'The request id (also in `X-Request-Id`), for support.' },
      },
    },
  },
};

const HEADERS: Record<string, OpenApiObject> = {
  XRequestId: {
    description: "The request's id: the caller's `X-Request-Id` when it is a plain token (`[A-Za-z0-9._-]{1,64}`), else a new UUID.",
    schema: { type: 'string' },
  },
  XRateLimitLimit: { description: "Requests per minute in the caller's window.", schema: { type: 'integer' } },
  XRateLimitRemaining: { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  XRateLimitReset: { description: 'When the window resets (Unix seconds).', schema: { type: 'integer' } },
  RetryAfter: { description: 'Seconds to wait before retrying (at least 1).', schema: { type: 'integer', minimum: 1 } },
};
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** `$defs` of every embedded schema become shared components. */
class Components {
  readonly schemas: Record<string, JsonSchema> = { Error: ERROR_BODY };

  embed(schema: JsonSchema): JsonSchema {
    const { $schema: _dialect, $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
    for (const [name, definition] of Object.entries($defs ?? {})) this.add(name, definition);
    return rewriteRefs(rest) as JsonSchema;
  }

  add(name: string, schema: JsonSchema): void {
    const embedded = this.embed(schema);
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(embedded))
      throw new Error(`Two different schemas are named ${name} in the API reference.`);
    this.schemas[name] = embedded;
  }
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [
      key,
      key === '$ref' && typeof child === 'string' ? child.replace(/^#\/\$defs\//, '#/components/schemas/') : rewriteRefs(child),
    ]),
  );
}

function errorResponses(kinds: readonly ErrorKind[], rateLimited: boolean): Record<string, OpenApiObject> {
  const byStatus = new Map<number, ErrorKind[]>();
  for (const kind of new Set(kinds)) byStatus.set(ERRORS[kind].status, [...(byStatus.get(ERRORS[kind].status) ?? []), kind]);
  const responses: Record<string, OpenApiObject> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const carriesRetryAfter = codes.some(
      (code) => code === 'rate_limited' || 'Retry-After' in ((ERRORS[code] as { headers?: object }).headers ?? {}),
    );
    responses[String(status)] = {
      description: codes.map((code) => `\`${code}\`${MEANINGS[code] ? `: ${MEANINGS[code]}` : ''}`).join('; '),
      headers: {
        'X-Request-Id': header('XRequestId'),
        ...(rateLimited && rateLimitHeaders()),
        ...(carriesRetryAfter && { 'Retry-After': header('RetryAfter') }),
      },
      content: {
        'application/json': {
          schema: {
            allOf: [{ $ref: '#/components/schemas/Error' }, { properties: { error: { properties: { code: { enum: codes } } } } }],
          },
        },
      },
    };
  }
  return responses;
}

const rateLimitHeaders = () => ({
  'X-RateLimit-Limit': header('XRateLimitLimit'),
  'X-RateLimit-Remaining': header('XRateLimitRemaining'),
  'X-RateLimit-Reset': header('XRateLimitReset'),
});

const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

function restOperation(route: RestRoute<Caller>, components: Components): OpenApiObject {
  const reference = route.reference ?? {};
  for (const [name, schema] of Object.entries(reference.components ?? {})) components.add(name, schema);
  const hasBody = route.method !== 'GET';
  // This order is the order of the document's components.
  const parameters = restParameters(route, components);
  const content = successContent(route, components);
  const body = hasBody && !reference.noBody && requestBody(route, components);
  const streamNotes = [...Object.values(reference.streams ?? {}), ...(route.download ? [route.download] : [])].map(
    (stream) => stream.description,
  );
  return {
    operationId: operationIdOf(route.method, route.path),
    summary: route.summary,
    ...(reference.description && { description: reference.description }),
    tags: [tagOf(route.path)],
    security: [{ [schemeOf(route.credential.name)]: [] }],
    parameters,
    ...(body && { requestBody: body }),
    responses: {
      [String(route.status ?? 200)]: {
        description: [route.status === 202 ? 'Accepted.' : 'Success.', ...streamNotes].join(' '),
        headers: successHeaders(route, components),
        content,
      },
      ...errorResponses(restErrors(route, hasBody), true),
    },
  };
}

function requestBody(route: RestRoute<Caller>, components: Components): OpenApiObject {
  const reference = route.reference ?? {};
  const content: OpenApiObject = {
    'application/json': {
      schema: reference.body ? components.embed(reference.body) : { type: 'object' },
      ...(reference.examples && { examples: reference.examples }),
    },
  };
  for (const [mediaType, text] of Object.entries(route.textBodies ?? {}))
    content[mediaType] = {
      schema: { ...(text.schema ? components.embed(text.schema) : { type: 'string' }), description: text.description },
    };
  return { required: true, content };
}

function restErrors(route: RestRoute<Caller>, hasBody: boolean): ErrorKind[] {
  return [
    ...HOST_ERRORS,
    ...REST_ERRORS.filter((kind) => hasBody || kind !== 'unsupported_media_type'),
    ...(route.holdSlot ? (['concurrency_limit'] as const) : []),
    ...(route.idempotencyHeader ? (['idempotency_key_in_use', 'idempotency_key_reused'] as const) : []),
    // A path parameter that does not decode, or is over-long, is no route at all.
    ...(route.pathParameters ? (['not_found'] as const) : []),
    ...(route.reference?.errors ?? []),
  ];
}

const pathParameters = (parameters: Record<string, { description: string; schema: JsonSchema }> | undefined, components: Components) =>
  Object.entries(parameters ?? {}).map(([name, p]) => ({
    name,
    in: 'path',
    required: true,
    description: p.description,
    schema: components.embed(p.schema),
  }));

function restParameters(route: RestRoute<Caller>, components: Components): OpenApiObject[] {
  const reference = route.reference ?? {};
  const querySchema = route.query ?? reference.query;
  const query = querySchema ? components.embed(querySchema) : undefined;
  const requestHeaders = {
    ...(route.idempotencyHeader && { [route.idempotencyHeader]: { ...IDEMPOTENCY_KEY_HEADER, required: false } }),
    ...reference.requestHeaders,
  };
  const required = new Set((query?.required ?? []) as string[]);
  return [
    { $ref: '#/components/parameters/XRequestId' },
    ...Object.entries(requestHeaders).map(([name, h]) => ({
      name,
      in: 'header',
      description: h.description,
      required: h.required ?? false,
      schema: h.schema ? components.embed(h.schema) : { type: 'string' },
    })),
    ...pathParameters(route.pathParameters, components),
    ...Object.entries((query?.properties ?? {}) as Record<string, JsonSchema>).map(([name, schema]) => ({
      name,
      in: 'query',
      required: required.has(name),
      ...(typeof schema.description === 'string' && { description: schema.description }),
      schema,
    })),
  ];
}

function successContent(route: RestRoute<Caller>, components: Components): OpenApiObject {
  const reference = route.reference ?? {};
  const content: OpenApiObject = reference.response ? json(components.embed(reference.response)) : json({});
  const streams = {
    ...reference.streams,
    ...(route.download && { [route.download.mediaType]: { description: route.download.description } }),
  };
  for (const [mediaType, stream] of Object.entries(streams) as [string, { description: string; schema?: JsonSchema }][])
    // A media type object has no description of its own: the stream's is its schema's.
    content[mediaType] = {
      schema: { ...(stream.schema ? components.embed(stream.schema) : { type: 'string' }), description: stream.description },
    };
  return content;
}

function successHeaders(route: RestRoute<Caller>, components: Components): OpenApiObject {
  const declared = {
    ...Object.fromEntries(
      Object.entries(route.responseHeaders ?? {}).map(([name, h]) => [name, { description: h.description, schema: h.schema }]),
    ),
    ...route.reference?.responseHeaders,
  };
  return {
    'X-Request-Id': header('XRequestId'),
    ...rateLimitHeaders(),
    ...Object.fromEntries(
      Object.entries(declared).map(([name, h]) => [
        name,
        { description: h.description, schema: h.schema ? components.embed(h.schema) : { type: 'string' } },
      ]),
    ),
  };
}

function documentedOperation(route: DocumentedRoute, components: Components): OpenApiObject {
  const rateLimited = route.rateLimited ?? false;
  const errors = [
    ...HOST_ERRORS,
    ...(route.credential ? (['invalid_key', 'rate_limited'] as const) : []),
    // A path parameter that does not decode, or is over-long, is no route at all.
    ...(route.pathParameters ? (['not_found'] as const) : []),
    ...(route.errors ?? []),
  ];
  const responses: Record<string, OpenApiObject> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      headers: { 'X-Request-Id': header('XRequestId'), ...(rateLimited && rateLimitHeaders()) },
      ...(response.schema && { content: { [response.mediaType ?? 'application/json']: { schema: components.embed(response.schema) } } }),
    };
  }
  return {
    operationId: operationIdOf(route.method, route.path),
    summary: route.summary,
    ...(route.description && { description: route.description }),
    tags: [route.tag],
    security: route.credential ? [{ [schemeOf(route.credential)]: [] }] : [],
    parameters: [{ $ref: '#/components/parameters/XRequestId' }, ...pathParameters(route.pathParameters, components)],
    responses: { ...responses, ...errorResponses(errors, rateLimited) },
  };
}

/** Unique per method and path: `POST /api/v1/skiptrace` → `postApiV1Skiptrace`. */
const operationIdOf = (method: string, path: string) =>
  method.toLowerCase() +
  path
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');

const tagOf = (path: string) => (path.startsWith('/api/v1/skiptrace') ? 'Skip trace' : 'Notifications gateway');

export function buildOpenApiDocument(sources: OpenApiSources): OpenApiObject {
  const components = new Components();
  const paths: Record<string, Record<string, OpenApiObject>> = {};
  const add = (method: string, path: string, operation: OpenApiObject) => {
    const openApiPath = path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    if (paths[openApiPath]?.[method.toLowerCase()]) throw new Error(`${method} ${path} is documented twice.`);
    paths[openApiPath] = { ...paths[openApiPath], [method.toLowerCase()]: operation };
  };
  for (const route of sources.restRoutes) add(route.method, route.path, restOperation(route, components));
  for (const route of sources.documentedRoutes) add(route.method, route.path, documentedOperation(route, components));

  const credentials = new Set([
    ...sources.restRoutes.map((route) => route.credential.name),
    ...sources.documentedRoutes.flatMap((route) => (route.credential ? [route.credential] : [])),
  ]);
  return {
    openapi: '3.1.1',
    jsonSchemaDialect: JSON_SCHEMA_DIALECT,
    info: {
      title: 'CRM developer API',
      version: API_VERSION,
      contact: { name: 'The CRM platform team, who issue your keys' },
      license: { name: 'Proprietary: for customers of the CRM, under their agreement', identifier: 'LicenseRef-Proprietary' },
      description: [
        'The server-to-server API of a real-estate CRM: the notifications feed through one gateway endpoint, and skip trace. Keys are secrets for servers: never put them in browser or mobile code; no response carries CORS headers.',
        '',
        'Every error is `{"error": {code, message, details?}}`; every response carries `X-Request-Id`, and every response of a route that takes a key carries the `X-RateLimit-*` headers. Another method on a documented path answers `405 method_not_allowed` (with `Allow`); an unknown path `404 not_found`. Requests without a valid key count against a per-client-IP window.',
        '',
        'GraphQL for internal tools is at `/graphql` (GraphiQL there outside production).',
      ].join('\n'),
    },
    tags: [
      { name: 'Notifications gateway', description: 'The feed, through `POST /api/v1/call`, and its discovery.' },
      { name: 'Skip trace', description: 'Owners of a street address, one credit per trace.' },
      { name: 'Service', description: 'Health, metrics and this reference.' },
    ],
    paths,
    components: {
      schemas: components.schemas,
      headers: HEADERS,
      parameters: {
        XRequestId: {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Your id for the request, echoed back when it is a plain token (`[A-Za-z0-9._-]{1,64}`).',
          schema: { type: 'string' },
        },
      },
      securitySchemes: Object.fromEntries(
        [...credentials].map((name) => [
          schemeOf(name),
          { type: 'http', scheme: 'bearer', description: CREDENTIALS[name]?.description ?? `A ${name}.` },
        ]),
      ),
    },
  };
}
