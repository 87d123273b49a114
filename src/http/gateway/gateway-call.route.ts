/** The gateway: its persisted operations, their registry built at start-up, and `POST /api/v1/call`. */
import { parse, validate, type GraphQLSchema, type OperationTypeNode } from 'graphql';
import manifest from './__generated__/persisted-documents.json' with { type: 'json' };
import { mustBeOfType, UNKNOWN_FIELD } from '../../common/detail-messages.js';
import { AppError } from '../../common/errors.js';
import type { JsonSchema } from '../../schema/json-schema.js';
import type { Scope, UserPrincipal } from '../../schema/principal.js';
import { prepareOperation, type RestOperation } from '../rest/operation.js';
import type { RestRoute, RouteReference } from '../rest/rest-route.js';

/** The persisted documents' manifest from codegen, imported as JSON so the build bundles it. */
export const persistedDocuments = {
  /** Accepts the hash with or without its `sha256:` prefix. */
  byHash: new Map(
    Object.entries(manifest as Record<string, string>).flatMap(([hash, document]) => [
      [hash, document],
      [hash.replace(/^sha256:/, ''), document],
    ]),
  ),
  entries: Object.entries(manifest as Record<string, string>),
};

/** One gateway operation: a persisted document, described entirely from the schema. */
export interface GatewayOperation {
  operationId: string;
  scope: Scope;
  description: string;
  /** The document's text, as discovery shows it. */
  text: string;
  documentId: string;
  /** The parsed document, its root field and its variables' validator. */
  prepared: RestOperation;
  result: JsonSchema;
}

/** Checks every persisted document against the schema; the build runs it, so start-up need not. */
export function validatePersistedDocuments(schema: GraphQLSchema, entries = persistedDocuments.entries) {
  for (const [documentId, text] of entries) {
    const errors = validate(schema, parse(text));
    if (errors.length) throw new Error(`Persisted document ${documentId} is invalid: ${errors.map((e) => e.message).join('; ')}`);
  }
}

/** The gateway's operations, their JSON Schemas and validators compiled once. */
export function buildOperationRegistry(schema: GraphQLSchema) {
  const operations = new Map<string, GatewayOperation>();
  for (const [documentId, text] of persistedDocuments.entries) {
    const document = parse(text);
    const prepared = prepareOperation(schema, document);
    if (!prepared.scope) throw new Error(`Gateway operation field ${prepared.rootField} must declare exactly one of READ, WRITE or ADMIN.`);
    const rootType = schema.getRootType(prepared.type as OperationTypeNode);
    operations.set(prepared.name, {
      operationId: prepared.name,
      scope: prepared.scope,
      description: rootType?.getFields()[prepared.rootField]?.description ?? '',
      text,
      documentId,
      prepared,
      result: prepared.result,
    });
  }
  return operations;
}

export type OperationRegistry = ReturnType<typeof buildOperationRegistry>;

const BODY_FIELDS = new Set(['operationId', 'variables']);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `POST /api/v1/call`: `{operationId, variables}` runs one persisted operation, answered as `{"data": …}`. */
export function gatewayCallRoute(registry: OperationRegistry): RestRoute<UserPrincipal> {
  return {
    method: 'POST',
    path: '/api/v1/call',
    summary: 'Runs a gateway operation named by operationId (GET /api/v1/operations lists them).',
    credential: { name: 'gateway key', serves: ['user'] },
    // Body shape (422), then operationId (404); the scope (403) is the operation's.
    toCall(body) {
      if (!isObject(body)) throw new AppError('invalid_request', 'The body must be a JSON object with operationId and variables.');
      const unknown = Object.keys(body).filter((key) => !BODY_FIELDS.has(key));
      if (unknown.length)
        throw new AppError(
          'invalid_request',
          'The body has unknown fields.',
          unknown.map((path) => ({ path, message: UNKNOWN_FIELD })),
        );
      if (typeof body.operationId !== 'string')
        throw new AppError('invalid_request', 'operationId must be a string.', [
          { path: 'operationId', message: mustBeOfType(['string']) },
        ]);
      if (body.variables !== undefined && !isObject(body.variables))
        throw new AppError('invalid_request', 'variables must be an object.', [{ path: 'variables', message: mustBeOfType(['object']) }]);
      const operation = registry.get(body.operationId);
      if (!operation) throw new AppError('unknown_operation', 'Unknown operationId; GET /api/v1/operations lists them.');
      return { operation: operation.prepared, variables: (body.variables as Record<string, unknown> | undefined) ?? {} };
    },
    invalid: { message: 'variables are invalid.' },
    respond: (value) => ({ data: value }),
    reference: gatewayReference(registry),
    // watchNotifications: each event as `{"data": <event>}`, like a call's answer.
    stream: { event: (value) => ({ data: value }) },
  };
}

const component = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const names = (operationId: string) => ({
  call: `${operationId}Call`,
  variables: `${operationId}Variables`,
  response: `${operationId}Response`,
  result: `${operationId}Result`,
});
// A subscription's persisted document is a stream of results, not one.
const isStream = (op: GatewayOperation) => (op.prepared.type as string) === 'subscription';

/** A value for each required property (defaults elsewhere), so an example body is valid as shown. */
function exampleOf(schema: JsonSchema): unknown {
  if (schema.default !== undefined) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (type === 'boolean') return true;
  if (type === 'integer' || type === 'number') return typeof schema.minimum === 'number' ? schema.minimum : 0;
  if (type === 'array') return [];
  if (type === 'string') return '…';
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = (schema.required ?? []) as string[];
  return Object.fromEntries(required.map((name) => [name, exampleOf(properties[name] ?? {})]));
}

const oneOrAnyOf = (schemas: JsonSchema[]): JsonSchema => (schemas.length === 1 ? schemas[0] : { anyOf: schemas });

/** `POST /api/v1/call` in the API reference: one call schema per operationId, told apart by `operationId`. */
function gatewayReference(registry: OperationRegistry): RouteReference {
  const operations = [...registry.values()];
  const rows = operations.map((op) => `| \`${op.operationId}\` | ${op.scope} | ${op.prepared.type} | ${op.description} |`);
  return {
    description: [
      "Each `operationId` runs one persisted GraphQL operation; `data` is its root field. A key needs the operation's scope.",
      '`GET /api/v1/operations` lists the same operations with their GraphQL documents and JSON Schemas.',
      '',
      '| operationId | scope | type | description |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n'),
    components: Object.assign({}, ...operations.map(operationComponents)) as Record<string, JsonSchema>,
    body: {
      oneOf: operations.map((op) => component(names(op.operationId).call)),
      discriminator: {
        propertyName: 'operationId',
        mapping: Object.fromEntries(operations.map((op) => [op.operationId, `#/components/schemas/${names(op.operationId).call}`])),
      },
    },
    response: {
      description: '`{"data": <the operation\'s result>}`: one of these, by operationId.',
      anyOf: operations.filter((op) => !isStream(op)).map((op) => component(names(op.operationId).response)),
    },
    ...streamsReference(operations.filter(isStream)),
    // concurrency_limit: a stream past the stream limits, or a user's marks past those waiting on the instance.
    errors: ['unknown_operation', 'insufficient_scope', 'concurrency_limit'],
    examples: Object.fromEntries(
      operations.map((op) => [
        op.operationId,
        { summary: op.operationId, value: { operationId: op.operationId, variables: exampleOf(op.prepared.variables.schema) } },
      ]),
    ),
  };
}

/** An operation's call, variables, result and response schemas. */
function operationComponents(op: GatewayOperation): Record<string, JsonSchema> {
  const name = names(op.operationId);
  const variables = op.prepared.variables.schema;
  const hasRequired = Array.isArray(variables.required) && variables.required.length > 0;
  return {
    [name.variables]: variables,
    [name.result]: op.result,
    [name.call]: {
      type: 'object',
      title: op.operationId,
      description: `${op.description} Scope: ${op.scope}.`,
      additionalProperties: false,
      required: hasRequired ? ['operationId', 'variables'] : ['operationId'],
      properties: {
        operationId: { const: op.operationId },
        variables: { ...component(name.variables), description: hasRequired ? 'Required.' : 'May be omitted: omitted is `{}`.' },
      },
    },
    [name.response]: {
      type: 'object',
      title: op.operationId,
      additionalProperties: false,
      required: ['data'],
      properties: { data: component(name.result) },
    },
  };
}

/** The subscriptions' Server-Sent Events, when there are any. */
function streamsReference(streams: GatewayOperation[]): Pick<RouteReference, 'streams'> {
  if (!streams.length) return {};
  const listed = (name: (op: GatewayOperation) => string) => streams.map((op) => `\`${name(op)}\``).join(', ');
  return {
    streams: {
      'text/event-stream': {
        description: `With \`Accept: text/event-stream\`, for ${listed((op) => op.operationId)}: Server-Sent Events (GraphQL over SSE); each \`next\` event's data is \`{"data": <event>}\`, as ${listed((op) => names(op.operationId).response)} describes it. Each event has an \`id\`: reconnecting with it as the \`Last-Event-ID\` header within 5 minutes first replays the events missed, in order (or sends one \`reset\` event: re-read).`,
        // An SSE body is text; contentSchema names the JSON its events carry, so tools can find it.
        schema: { type: 'string', contentSchema: oneOrAnyOf(streams.map((op) => component(names(op.operationId).response))) },
      },
    },
  };
}
