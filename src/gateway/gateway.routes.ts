import type { FastifyInstance } from 'fastify';
import type { UserPrincipal } from '../auth/principal.js';
import type { OperationExecutor } from '../graphql/execute-operation.js';
import type { Services } from '../services.js';
import { ApiError } from '../infra/http/api-error.js';
import { credentialGuard } from '../infra/http/credential-guard.js';
import { variableErrorDetails, type GatewayOperation, type OperationRegistry } from './operation-registry.js';

const BODY_FIELDS = new Set(['operationId', 'variables']);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Body shape (422), then operationId (404): the checks before the operation is known. */
function parseCallBody(body: unknown, registry: OperationRegistry): { operation: GatewayOperation; variables: Record<string, unknown> } {
  if (!isObject(body)) throw new ApiError('invalid_request', 'The body must be a JSON object with operationId and variables.');
  const unknown = Object.keys(body).filter((key) => !BODY_FIELDS.has(key));
  if (unknown.length) throw new ApiError('invalid_request', 'The body has unknown fields.', unknown.map((path) => ({ path, message: 'is not a known field' })));
  if (typeof body.operationId !== 'string') throw new ApiError('invalid_request', 'operationId must be a string.', [{ path: 'operationId', message: 'must be a string' }]);
  if (body.variables !== undefined && !isObject(body.variables)) throw new ApiError('invalid_request', 'variables must be an object.', [{ path: 'variables', message: 'must be an object' }]);
  const operation = registry.get(body.operationId);
  if (!operation) throw new ApiError('unknown_operation', `Unknown operationId; GET /api/v1/operations lists them.`);
  return { operation, variables: (body.variables as Record<string, unknown> | undefined) ?? {} };
}

/**
 * `POST /api/v1/call`: a thin translation of `{operationId, variables}` into the persisted GraphQL
 * operation, executed against the same schema, context and error masking as `/graphql`.
 */
export function registerGatewayRoutes(app: FastifyInstance, deps: { services: Services; executeOperation: OperationExecutor; registry: OperationRegistry }) {
  const { services, executeOperation, registry } = deps;
  const guard = credentialGuard({ services, accepts: (principal): principal is UserPrincipal => principal.type === 'user' });

  app.post('/api/v1/call', { onRequest: guard }, async (request, reply) => {
    const principal = request.principal as UserPrincipal;
    const { operation, variables } = parseCallBody(request.body, registry);
    if (!principal.scopes.has(operation.scope)) throw new ApiError('insufficient_scope', `${operation.operationId} needs the ${operation.scope} scope.`);
    if (!operation.validateVariables(variables)) throw new ApiError('invalid_request', 'variables are invalid.', variableErrorDetails(operation.validateVariables));

    const { data, error } = await executeOperation(operation.parsed, variables, { principal, requestId: request.id, log: request.log, client: request.client });
    if (error) throw ApiError.fromGraphQL(error);
    return reply.send({ data: data?.[operation.rootField] ?? null });
  });

  const describe = (op: GatewayOperation) => ({
    operationId: op.operationId,
    scope: op.scope,
    type: op.type,
    description: op.description,
    document: op.document,
    variables: op.variables,
    result: op.result,
  });
  app.get('/api/v1/operations', async () => ({ operations: [...registry.values()].map(describe) }));
  app.get<{ Params: { operationId: string } }>('/api/v1/operations/:operationId', async (request) => {
    const operation = registry.get(request.params.operationId);
    if (!operation) throw new ApiError('unknown_operation', 'Unknown operationId; GET /api/v1/operations lists them.');
    return describe(operation);
  });
}
