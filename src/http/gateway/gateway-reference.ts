import type { JsonSchema } from '../../schema/json-schema.js';
import type { RouteReference } from '../rest/rest-route.js';
import type { GatewayOperation, OperationRegistry } from './operation-registry.js';

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

/**
 * `POST /api/v1/call` in the API reference: a request and a response schema per operationId, the
 * ones discovery publishes; the body is one of the call schemas, told apart by `operationId`.
 */
export function gatewayReference(registry: OperationRegistry): RouteReference {
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
