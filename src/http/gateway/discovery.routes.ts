import type { FastifyInstance } from 'fastify';
import { AppError } from '../../common/errors.js';
import { allowOnly } from '../server.js';
import type { JsonSchema } from '../../schema/json-schema.js';
import type { DocumentedRoute } from '../documented-route.js';
import type { GatewayOperation, OperationRegistry } from './gateway-call.route.js';

const describe = (op: GatewayOperation) => ({
  operationId: op.operationId,
  scope: op.scope,
  type: op.prepared.type,
  description: op.description,
  document: op.text,
  variables: op.prepared.variables.schema,
  result: op.result,
});

/** `GET /api/v1/operations` and `/api/v1/operations/:operationId`: the gateway's operations, described from the schema. */
export function registerDiscoveryRoutes(app: FastifyInstance, registry: OperationRegistry) {
  app.get('/api/v1/operations', async () => ({ operations: [...registry.values()].map(describe) }));
  app.get<{ Params: { operationId: string } }>('/api/v1/operations/:operationId', async (request) => {
    const operation = registry.get(request.params.operationId);
    if (!operation) throw new AppError('unknown_operation', 'Unknown operationId; GET /api/v1/operations lists them.');
    return describe(operation);
  });
  allowOnly(app, '/api/v1/operations', ['GET']);
  allowOnly(app, '/api/v1/operations/:operationId', ['GET']);
}

const OPERATION_DESCRIPTION: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['operationId', 'scope', 'type', 'description', 'document', 'variables', 'result'],
  properties: {
    operationId: { type: 'string' },
    scope: { type: 'string', enum: ['READ', 'WRITE', 'ADMIN'] },
    type: { type: 'string', enum: ['query', 'mutation', 'subscription'] },
    description: { type: 'string' },
    document: { type: 'string', description: 'The persisted GraphQL document the operation runs.' },
    variables: { type: 'object', description: 'The JSON Schema (draft 2020-12) of `variables`.' },
    result: { type: 'object', description: 'The JSON Schema (draft 2020-12) of `data`.' },
  },
};

/** The discovery routes, as the API reference documents them. */
export const discoveryReference: readonly DocumentedRoute[] = [
  {
    method: 'GET',
    path: '/api/v1/operations',
    summary: "The gateway's operations, with their JSON Schemas. Public.",
    description:
      'Each operation with its scope, type, GraphQL document and the JSON Schemas (draft 2020-12) of its variables and result, derived from the GraphQL schema.',
    tag: 'Notifications gateway',
    responses: {
      200: {
        description: 'Every operation.',
        schema: {
          type: 'object',
          additionalProperties: false,
          required: ['operations'],
          properties: { operations: { type: 'array', items: { $ref: '#/$defs/OperationDescription' } } },
          $defs: { OperationDescription: OPERATION_DESCRIPTION },
        },
      },
    },
  },
  {
    method: 'GET',
    path: '/api/v1/operations/{operationId}',
    summary: 'One gateway operation, with its JSON Schemas. Public.',
    description: 'The entry of `GET /api/v1/operations` for one `operationId`; `404 not_found` for any other.',
    tag: 'Notifications gateway',
    pathParameters: { operationId: { description: 'An operationId of `GET /api/v1/operations`.', schema: { type: 'string' } } },
    responses: {
      200: {
        description: 'The operation.',
        schema: { $ref: '#/$defs/OperationDescription', $defs: { OperationDescription: OPERATION_DESCRIPTION } },
      },
    },
    errors: ['unknown_operation'],
  },
];
