import { mustBeOfType, UNKNOWN_FIELD } from '../../../common/detail-messages.js';
import { AppError } from '../../../common/errors.js';
import type { UserPrincipal } from '../../../schema/principal.js';
import type { OperationRegistry } from '../../gateway/operation-registry.js';
import { gatewayReference } from '../../gateway/gateway-reference.js';
import type { RestRoute } from '../rest-route.js';

const BODY_FIELDS = new Set(['operationId', 'variables']);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `POST /api/v1/call`: `{operationId, variables}` names one of the gateway's persisted
 * operations (http/gateway/operations/*.graphql); the answer is `{"data": <its root field>}`.
 */
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
