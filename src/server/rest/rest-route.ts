import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { AppError } from '../../common/errors.js';
import type { Services } from '../../graphql/context.js';
import type { Principal } from '../../graphql/principal.js';
import type { Caller } from '../../auth/rate-windows.js';
import type { ClientWatch } from '../../infra/http/client-watch.js';
import { allowOnly } from '../../infra/http/server.js';
import { credentialGuard } from '../credential-guard.js';
import type { OperationExecutor, OperationSubscriber } from './operation-executor.js';
import { requireEventStream, sendStream, type RestStream } from './streaming.js';
import { fragmentsOf } from './json-schema.js';
import { variablesValidator, type VariablesValidator } from './variables.js';

/** A GraphQL document a REST route runs, checked against the schema and prepared at start-up. */
export interface RestOperation {
  name: string;
  type: 'query' | 'mutation' | 'subscription';
  document: DocumentNode;
  /** Its one root field, whose value the route answers with. */
  rootField: string;
  variables: VariablesValidator;
}

export const operationOf = (document: DocumentNode): OperationDefinitionNode => {
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (!operation) throw new Error('The document has no operation.');
  return operation;
};

export function prepareOperation(schema: GraphQLSchema, document: DocumentNode): RestOperation {
  const operation = operationOf(document);
  if (!operation.name) throw new Error('A REST operation is a named operation.');
  const fields = operation.selectionSet.selections;
  if (fields.length !== 1 || fields[0].kind !== Kind.FIELD)
    throw new Error(`Operation ${operation.name.value} must select exactly one root field.`);
  return {
    name: operation.name.value,
    type: operation.operation,
    document,
    rootField: fields[0].name.value,
    variables: variablesValidator(schema, operation, fragmentsOf(document)),
  };
}

/** What a route's body asks for: an operation and its variables (before they are checked). */
export interface OperationCall {
  operation: RestOperation;
  variables: Record<string, unknown>;
}

/**
 * A REST route, declared: everything route-specific, as data and small functions. The generic
 * handler below runs every declaration through the same checks, in the contract's order:
 *
 *   credential (401) → rate window (429) → admission (429) → body size (413) → media type (415)
 *   → JSON (422) → body → operation (422, 404, 403) → variables (422) → execute → one error mapping
 *
 * so a new route cannot skip one. Errors are AppErrors (common/errors.ts) throughout.
 */
export interface RestRoute<C extends Caller = Caller> {
  method: 'POST';
  path: string;
  /** One line for discovery and the API reference. */
  summary: string;
  /** Which credentials the route serves; any other gets 401 `invalid_key`. */
  credential: { name: string; accepts: (principal: Principal) => principal is C };
  /**
   * Runs before the body is read, once the caller is known and within its window: what the
   * caller may hold at once (the skip trace in-flight slot). Refuses by throwing an AppError;
   * whatever it takes is released when the response is done or the caller leaves.
   */
  admit?: (services: Services, caller: C, client: ClientWatch) => void;
  /** The body (parsed JSON, not yet checked) as the operation to run and its variables. */
  toCall: (body: unknown, caller: C) => OperationCall;
  /** How `details` paths read for this route (e.g. relative to the body rather than `variables`). */
  detailPath?: (path: string) => string;
  /** The message of a 422 whose details name the failing variables. */
  invalidMessage: string;
  /** The response body from the root field's value. */
  respond: (value: unknown) => unknown;
  /** How a subscription is answered (Server-Sent Events); a route without it runs none. */
  stream?: RestStream;
  /** Told of every request the route refused before its operation ran (e.g. for an audit). */
  onRefused?: (services: Services, refusal: { caller: C; kind: string; startedAt: number }) => Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** `performance.now()` when a REST route began handling the request. */
    restStartedAt?: number;
    /** Whether the route's operation began executing (its own errors are then its own to record). */
    restExecuting?: boolean;
  }
}

/** Registers a declared REST route, and 405 for its other methods. */
export function registerRestRoute<C extends Caller>(
  app: FastifyInstance,
  deps: { services: Services; executeOperation: OperationExecutor; subscribeOperation: OperationSubscriber },
  route: RestRoute<C>,
) {
  const { services, executeOperation, subscribeOperation } = deps;
  const { admit, onRefused } = route;
  const callerOf = (request: FastifyRequest) => request.principal as C;

  app.route({
    method: route.method,
    url: route.path,
    onRequest: [
      async (request) => {
        request.restStartedAt = performance.now();
      },
      credentialGuard({ services, accepts: route.credential.accepts }),
      ...(admit ? [async (request: FastifyRequest) => admit(services, callerOf(request), request.client)] : []),
    ],
    ...(onRefused && {
      // Before the answer leaves: a caller that has its refusal can already find it recorded.
      onSend: async (request: FastifyRequest, _reply: unknown, payload: unknown) => {
        const caller = request.principal;
        if (caller && route.credential.accepts(caller) && !request.restExecuting && request.errorCode) {
          await onRefused(services, { caller, kind: request.errorCode, startedAt: request.restStartedAt ?? performance.now() }).catch(
            (error) => request.log.error({ err: error }, `could not record a refusal of ${route.path}`),
          );
        }
        return payload;
      },
    }),
    handler: async (request, reply) => {
      const caller = callerOf(request);
      const { operation, variables } = route.toCall(request.body, caller);
      if (operation.type === 'subscription') requireEventStream(request, operation.name, route.stream);
      const details = operation.variables.check(variables);
      if (details.length) {
        const detailPath = route.detailPath ?? ((path: string) => path);
        throw new AppError(
          'invalid_request',
          route.invalidMessage,
          details.map((d) => ({ ...d, path: detailPath(d.path) })),
        );
      }
      request.restExecuting = true;
      const context = { principal: caller, requestId: request.id, log: request.log, client: request.client };
      if (operation.type === 'subscription')
        return sendStream(reply, subscribeOperation, { operation, variables, context, stream: route.stream! });
      const { data, error } = await executeOperation(operation.document, variables, context);
      if (error) throw error;
      return reply.send(route.respond(data?.[operation.rootField] ?? null));
    },
  });
  allowOnly(app, route.path, [route.method]);
}
