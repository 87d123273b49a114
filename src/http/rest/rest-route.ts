import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { getArgumentValues, Kind, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { AppError } from '../../common/errors.js';
import type { RequestContext, Services } from '../../schema/context.js';
import type { Sql } from '../../infra/database/sql.js';
import { preloadOf, type KeyPreload } from '../../auth/key-preload.js';
import type { Principal } from '../../schema/principal.js';
import type { Caller } from '../../auth/rate-windows.js';
import type { ClientWatch } from '../../infra/client-watch.js';
import { allowOnly } from '../server.js';
import { credentialGuard, settlePendingKey, settleWithLookup } from '../credential-guard.js';
import type { OperationExecutor, OperationSubscriber } from './operation-executor.js';
import { requireEventStream, sendStream, type RestStream } from '../streams/rest-stream.js';
import { fragmentsOf, resultJsonSchema, type JsonSchema } from '../../schema/json-schema.js';
import type { ErrorKind } from '../../common/errors.js';
import { variablesValidator, type VariablesValidator } from './variables.js';
import { readIdempotencyKey } from './idempotency-key.js';
import { queryVariables } from './query-parameters.js';

/** A GraphQL document a REST route runs, checked against the schema and prepared at start-up. */
export interface RestOperation {
  name: string;
  type: 'query' | 'mutation' | 'subscription';
  document: DocumentNode;
  /** Its one root field, whose value the route answers with. */
  rootField: string;
  variables: VariablesValidator;
  /** The JSON Schema of its root field's value, as discovery and the API reference publish it. */
  result: JsonSchema;
  /**
   * Its root field's preload (`auth/key-preload.ts`), for its (valid) variables: a query's one
   * statement that looks the gateway key up too. Absent for mutations and fields without one.
   */
  preload?: (sql: Sql, keyHash: string, variables: Record<string, unknown>) => KeyPreload | null;
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
  const node = fields[0];
  const definition = operation.operation === 'query' ? schema.getQueryType()?.getFields()[node.name.value] : undefined;
  const preload = preloadOf(definition?.extensions);
  return {
    ...(definition &&
      preload && {
        preload: (sql: Sql, keyHash: string, variables: Record<string, unknown>) =>
          preload(sql, keyHash, getArgumentValues(definition, node, variables)),
      }),
    name: operation.name.value,
    type: operation.operation,
    document,
    rootField: fields[0].name.value,
    variables: variablesValidator(schema, operation, fragmentsOf(document)),
    result: resultJsonSchema(schema, operation, { rootField: true, fragments: fragmentsOf(document) }),
  };
}

/**
 * What the API reference (`GET /openapi.json`, reference/) says of a route beyond its
 * method, path, summary and credential. Schemas are JSON Schemas as json-schema.ts derives them
 * (their `$defs` become shared components); `#/components/schemas/<name>` refers to `components`.
 */
export interface RouteReference {
  /** Longer text (Markdown) under the summary. */
  description?: string;
  /** The JSON body. */
  body?: JsonSchema;
  /** The query parameters: an object schema, one property per parameter. */
  query?: JsonSchema;
  /** The 200 body (JSON). */
  response?: JsonSchema;
  /** Other media types a 200 may take (e.g. `text/event-stream`), by media type. */
  streams?: Record<string, { description: string; schema?: JsonSchema }>;
  /** Request headers the route reads besides Authorization and X-Request-Id (e.g. `Idempotency-Key`). */
  requestHeaders?: Record<string, { description: string; required?: boolean; schema?: JsonSchema }>;
  /** Headers of its 200 besides the rate-limit headers and X-Request-Id. */
  responseHeaders?: Record<string, { description: string; schema?: JsonSchema }>;
  /** Errors the route answers with besides those every declared route can (credential, window, body, admission). */
  errors?: ErrorKind[];
  /** Named schemas the others refer to (`#/components/schemas/<name>`). */
  components?: Record<string, JsonSchema>;
  /** Example bodies, by name. */
  examples?: Record<string, { summary?: string; value: unknown }>;
}

/** The body of an operation whose variables are one input object, `$<variable>` (e.g. skip trace's `input`). */
export function inputBodySchema(operation: RestOperation, variable: string): JsonSchema {
  const { $schema, $defs, properties } = operation.variables.schema as { $schema: string; $defs?: JsonSchema; properties: JsonSchema };
  const input = properties[variable];
  if (!input) throw new Error(`Operation ${operation.name} has no variable $${variable}.`);
  return { $schema, ...($defs && { $defs }), ...(input as JsonSchema) };
}

/** What a route's body asks for: an operation and its variables (before they are checked). */
export interface OperationCall {
  operation: RestOperation;
  variables: Record<string, unknown>;
}

/** A header of a route's successful answers: described (for the API reference) and taken from the root field's value. */
export interface ResponseHeader<V> {
  description: string;
  schema: JsonSchema;
  /** Its value for this answer; undefined: not sent. */
  value: (result: V) => string | undefined;
}

/**
 * A REST route, declared: everything route-specific, as data and small functions. The generic
 * handler below runs every declaration through the same checks, in the contract's order:
 *
 *   credential (401) → rate window (429) → admission (429) → body size (413) → media type (415)
 *   → JSON (422) → Idempotency-Key header (422) → body or query → operation (422, 404, 403)
 *   → variables (422) → execute → one error mapping
 *
 * so a new route cannot skip one. Errors are AppErrors (common/errors.ts) throughout. `C`: the
 * callers it serves; `V`: its operation's root field value.
 */
export interface RestRoute<C extends Caller = Caller, V = unknown> {
  /** POST routes take a JSON body; GET routes take query parameters. */
  method: 'POST' | 'GET';
  path: string;
  /** One line for discovery and the API reference. */
  summary: string;
  /** Which credentials the route serves; any other gets 401 `invalid_key`. */
  credential: {
    name: string;
    accepts: (principal: Principal) => principal is C;
    /**
     * A route serving gateway keys only: the key is looked up in the handler, concurrently with
     * its rate window, or folded into the operation's statement (`credentialGuard`'s `defer`).
     */
    defer?: boolean;
  };
  /**
   * Runs before the body is read, once the caller is known and within its window: what the
   * caller may hold at once (the skip trace in-flight slot). Refuses by throwing an AppError;
   * whatever it takes is released when the response is done or the caller leaves.
   */
  admit?: (services: Services, caller: C, client: ClientWatch) => void;
  /**
   * GET routes: the JSON Schema of the query parameters, which are the operation's variables by
   * name (derived from the schema: `operation.variables.schema`). Values arrive as strings; those
   * the schema types as integers or booleans are read as such; an unknown or repeated parameter is
   * 422 naming it (`query-parameters.ts`).
   */
  query?: JsonSchema;
  /**
   * The request header that may carry an idempotency key (`Idempotency-Key`): when present it must
   * be 1 to 255 printable ASCII characters (else 422 naming it), and it is handed to the operation
   * with its body's fingerprint (context `idempotencyKey`), which does the rest.
   */
  idempotencyHeader?: string;
  /** The body (POST: parsed JSON, not yet checked) or the query parameters (GET) as the operation to run and its variables. */
  toCall: (input: unknown, caller: C) => OperationCall;
  /**
   * The operation the input names, when it would pass `toCall` but for the caller's scope;
   * undefined otherwise. Declared by a route serving gateway keys only (`credential.defer`), so
   * that a query's statement can start before the key is looked up (`auth/key-preload.ts`).
   */
  peek?: (input: unknown) => OperationCall | undefined;
  /** How `details` paths read for this route (e.g. relative to the body rather than `variables`). */
  detailPath?: (path: string) => string;
  /** The message of a 422 whose details name the failing variables. */
  invalidMessage: string;
  /** The response body from the root field's value. */
  respond: (value: V) => unknown;
  /** Headers of a successful answer, by name (the API reference documents them too). */
  responseHeaders?: Record<string, ResponseHeader<V>>;
  /** What the API reference says of the route beyond what the fields above declare; optional. */
  reference?: RouteReference;
  /** How a subscription is answered (Server-Sent Events); a route without it runs none. */
  stream?: RestStream;
  /**
   * Told of every request the route refused after its rate window admitted it and before its
   * operation ran (e.g. for an audit). A request the window refused is never told: it writes
   * nothing, so a flood past the window costs no database write (the window's metric counts it).
   */
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

/** The declarations registered on each app, in order: the API reference documents exactly these. */
const registered = new WeakMap<FastifyInstance, RestRoute<Caller>[]>();
export const registeredRestRoutes = (app: FastifyInstance): readonly RestRoute<Caller>[] => registered.get(app) ?? [];

/** A valid call's preload, started for the key with this hash; null without one (or for variables it could not read). */
function startPreload(sql: Sql, keyHash: string, call: OperationCall): KeyPreload | null {
  const { preload, variables } = call.operation;
  if (!preload || variables.check(call.variables).length) return null;
  try {
    return preload(sql, keyHash, call.variables);
  } catch {
    return null;
  }
}

/** A refusal the route's `onRefused` is told of: any but the rate window's (and none for an answered request). */
const isRefusalAfterWindow = (errorCode: string | undefined): errorCode is string =>
  errorCode !== undefined && errorCode !== 'rate_limited';

/** Registers a declared REST route, and 405 for its other methods. */
export function registerRestRoute<C extends Caller, V>(
  app: FastifyInstance,
  deps: { services: Services; executeOperation: OperationExecutor; subscribeOperation: OperationSubscriber },
  route: RestRoute<C, V>,
) {
  registered.set(app, [...registeredRestRoutes(app), route as unknown as RestRoute<Caller>]);
  const { services, executeOperation, subscribeOperation } = deps;
  const { admit, onRefused } = route;
  const callerOf = (request: FastifyRequest) => request.principal as C;
  const guard = credentialGuard({ services, accepts: route.credential.accepts, defer: route.credential.defer });

  app.route({
    method: route.method,
    url: route.path,
    onRequest: [
      // One hook: the start, then the guard.
      (request: FastifyRequest, reply: FastifyReply) => {
        request.restStartedAt = performance.now();
        return guard(request, reply);
      },
      ...(admit ? [async (request: FastifyRequest) => admit(services, callerOf(request), request.client)] : []),
    ],
    ...(onRefused && {
      // Before the answer leaves: a caller that has its refusal can already find it recorded.
      onSend: async (request: FastifyRequest, _reply: unknown, payload: unknown) => {
        const caller = request.principal;
        if (caller && route.credential.accepts(caller) && !request.restExecuting && isRefusalAfterWindow(request.errorCode)) {
          await onRefused(services, { caller, kind: request.errorCode, startedAt: request.restStartedAt ?? performance.now() }).catch(
            (error) => request.log.error({ err: error }, `could not record a refusal of ${route.path}`),
          );
        }
        return payload;
      },
    }),
    // A refusal before the handler (body size, media type, JSON) comes after the credential's and the window's.
    ...(route.credential.defer && {
      errorHandler: async (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
        let answered = error;
        try {
          await settleWithLookup(services, request, reply);
        } catch (refusal) {
          answered = refusal;
        }
        return request.server.errorHandler(answered as FastifyError, request, reply);
      },
    }),
    handler: async (request, reply) => {
      let preloaded: RequestContext['preloaded'];
      let checked: OperationCall | undefined;
      if (request.pendingKey) {
        // A valid read: its statement looks the key up too, concurrently with the key's window.
        const call = route.method === 'POST' ? route.peek?.(request.body) : undefined;
        const started = call && startPreload(services.sql, request.pendingKey.hash, call);
        if (started) {
          preloaded = { field: call.operation.rootField, value: started.value };
          checked = call;
        }
        await (started ? settlePendingKey(services, request, reply, started.owner) : settleWithLookup(services, request, reply));
      }
      const caller = callerOf(request);
      const idempotencyKey = route.idempotencyHeader ? readIdempotencyKey(request, route.idempotencyHeader) : undefined;
      const input = route.method === 'GET' ? queryVariables(route.query ?? {}, request.query) : request.body;
      const { operation, variables } = route.toCall(input, caller);
      if (operation.type === 'subscription') requireEventStream(request, operation.name, route.stream);
      // The preload's call came from this same body, its variables already checked.
      const details = checked?.operation === operation ? [] : operation.variables.check(variables);
      if (details.length) {
        const detailPath = route.detailPath ?? ((path: string) => path);
        throw new AppError(
          'invalid_request',
          route.invalidMessage,
          details.map((d) => ({ ...d, path: detailPath(d.path) })),
        );
      }
      request.restExecuting = true;
      const context = {
        principal: caller,
        requestId: request.id,
        log: request.log,
        client: request.client,
        ...(idempotencyKey && { idempotencyKey }),
        ...(preloaded && { preloaded }),
      };
      if (operation.type === 'subscription')
        return sendStream(reply, subscribeOperation, { operation, variables, context, stream: route.stream! });
      const { data, error } = await executeOperation(operation.document, variables, context);
      if (error) throw error;
      // The operation's root field, as the route's document selects it.
      const value = (data?.[operation.rootField] ?? null) as V;
      for (const [name, header] of Object.entries(route.responseHeaders ?? {})) {
        const headerValue = header.value(value);
        if (headerValue !== undefined) reply.header(name, headerValue);
      }
      return reply.send(route.respond(value));
    },
  });
  allowOnly(app, route.path, [route.method]);
}
