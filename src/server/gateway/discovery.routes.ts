import type { FastifyInstance } from 'fastify';
import { AppError } from '../../common/errors.js';
import { allowOnly } from '../../infra/http/server.js';
import type { GatewayOperation, OperationRegistry } from './operation-registry.js';

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
