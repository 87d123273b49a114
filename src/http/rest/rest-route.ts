import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../common/errors.js';
import type { RequestContext, Services } from '../../schema/context.js';
import type { Readable } from 'node:stream';
import type { Caller } from '../../schema/principal.js';
import type { ClientWatch } from '../../infra/client-watch.js';
import { allowOnly } from '../server.js';
import { identifyCaller, refuseUnidentified } from '../credential-guard.js';
import type { OperationExecutor, OperationSubscriber, RestOperation } from './operation.js';
import { requireEventStream, sendStream, type RestStream } from '../streams/rest-stream.js';
import { lastEventIdOf } from '../streams/event-stream.js';
import type { JsonSchema } from '../../schema/json-schema.js';
import type { ErrorKind } from '../../common/errors.js';
import { listVariablesProblems, type ListBody } from './list-variables.js';
import { readIdempotencyKey } from './idempotency-key.js';
import { queryVariables } from './query-parameters.js';

/** What the API reference says of a route beyond method, path, summary and credential. */
export interface RouteReference {
  description?: string;
  body?: JsonSchema;
  query?: JsonSchema;
  response?: JsonSchema;
  /** Other media types a 200 may take (e.g. `text/event-stream`), by media type. */
  streams?: Record<string, { description: string; schema?: JsonSchema }>;
  /** Request headers the route reads besides Authorization and X-Request-Id (e.g. `Idempotency-Key`). */
  requestHeaders?: Record<string, { description: string; required?: boolean; schema?: JsonSchema }>;
  /** Headers of its 200 besides the rate-limit headers and X-Request-Id. */
  responseHeaders?: Record<string, { description: string; schema?: JsonSchema }>;
  /** Errors the route answers with besides those every declared route can (credential, window, body, admission). */
  errors?: ErrorKind[];
  components?: Record<string, JsonSchema>;
  examples?: Record<string, { summary?: string; value: unknown }>;
  /** A POST that takes no body (e.g. an action on the resource its path names). */
  noBody?: boolean;
}

/** Another representation of the answer, chosen by `Accept`, streamed once every JSON stage passed. */
export interface RestDownload {
  mediaType: string;
  description: string;
  open: (services: Services, request: RequestContext, variables: Record<string, unknown>) => Promise<Readable>;
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
  /** Undefined: not sent. */
  value: (result: V) => string | undefined;
}

/**
 * A REST route as data. The generic stages below run every declaration through the same checks in
 * the contract's order (docs/architecture.md), so a new route cannot skip one.
 */
export interface RestRoute<C extends Caller = Caller, V = unknown> {
  method: 'POST' | 'GET';
  path: string;
  summary: string;
  /** Which credentials the route serves, by principal type; any other gets 401 `invalid_key`. */
  credential: { name: string; serves: readonly C['type'][] };
  /** What the caller may hold at once, taken before the body is read and released when the response is done. */
  holdSlot?: (services: Services, caller: C, client: ClientWatch) => void;
  /** GET routes: the JSON Schema of the query parameters (the operation's variables by name). */
  query?: JsonSchema;
  /** The header that may carry an idempotency key (`Idempotency-Key`). */
  idempotencyHeader?: string;
  /** The operation and variables from the body (POST) or query (GET) and the path parameters. */
  toCall: (input: unknown, url?: { params: Record<string, string>; query: Record<string, unknown> }) => OperationCall;
  /** A list body: its shape is one 422; each item fails alone on its own rules. */
  list?: ListBody;
  pathParameters?: Record<string, { description: string; schema: JsonSchema }>;
  /** The status of a successful answer; 200 unless said (202 for work accepted to run later). */
  status?: number;
  /** The body's limit in bytes, when not the REST routes' 64 KiB. */
  bodyLimit?: number;
  /** Media types the body may take besides JSON, read as text (`TextBody`, http/server.ts), described for the API reference. */
  textBodies?: Record<string, { description: string; schema?: JsonSchema }>;
  download?: RestDownload;
  /** A 422 for invalid variables: its message, and how `details` paths read (e.g. relative to the body rather than `variables`). */
  invalid: { message: string; path?: (path: string) => string };
  respond: (value: V) => unknown;
  responseHeaders?: Record<string, ResponseHeader<V>>;
  reference?: RouteReference;
  /** How a subscription is answered (Server-Sent Events); a route without it runs none. */
  stream?: RestStream;
  /** Told of refusals after the rate window admitted the request, so a flood past the window writes nothing. */
  onRefused?: (services: Services, refusal: { caller: C; kind: string; startedAt: number }) => Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** `performance.now()` when a REST route began handling the request. */
    restStartedAt?: number;
    /** The call the request's input named, read once (the HTTP metrics label gateway calls by it). */
    restCall?: OperationCall;
    /** Whether the route's operation began executing (its own errors are then its own to record). */
    restExecuting?: boolean;
  }
}

export interface RestDeps {
  services: Services;
  executeOperation: OperationExecutor;
  subscribeOperation: OperationSubscriber;
}

/** The declarations registered on each app, in order: the API reference documents exactly these. */
const registered = new WeakMap<FastifyInstance, RestRoute<Caller>[]>();
export const registeredRestRoutes = (app: FastifyInstance): readonly RestRoute<Caller>[] => registered.get(app) ?? [];

/** Stage 1, `onRequest`: who is calling and its window (401, 429), then what it may hold (429). */
function callerStage<C extends Caller>(services: Services, route: RestRoute<C, unknown>) {
  const { holdSlot, onRefused } = route;
  const serves = route.credential.serves;
  return async (request: FastifyRequest, reply: FastifyReply) => {
    // When the refusal hook's record says the request began.
    if (onRefused) request.restStartedAt = performance.now();
    const caller = refuseUnidentified(await identifyCaller(services, request, reply, serves));
    if (holdSlot) holdSlot(services, caller as C, request.client);
  };
}

/** Stage 2, the handler's first half: the input read once, as the call it names, checked (422, 404, 403, 422). */
function readCall(route: RestRoute<Caller, unknown>, request: FastifyRequest, caller: Caller): OperationCall {
  const input = route.method === 'GET' ? queryVariables(route.query ?? {}, request.query) : request.body;
  const url = { params: (request.params ?? {}) as Record<string, string>, query: (request.query ?? {}) as Record<string, unknown> };
  const call = route.toCall(input, url);
  request.restCall = call;
  const { operation, variables } = call;
  if (operation.scope && !(caller.type === 'user' && caller.scopes.has(operation.scope)))
    throw new AppError('insufficient_scope', `${operation.name} needs the ${operation.scope} scope.`);
  if (operation.type === 'subscription') requireEventStream(request, operation.name, route.stream);
  const details = route.list ? listVariablesProblems(operation.variables, variables, route.list) : operation.variables.check(variables);
  if (details.length) {
    const path = route.invalid.path;
    throw new AppError('invalid_request', route.invalid.message, path ? details.map((d) => ({ ...d, path: path(d.path) })) : details);
  }
  return call;
}

/** Stage 3: the operation, answered with its root field's value (and the route's headers). */
async function runCall<V>(deps: RestDeps, route: RestRoute<Caller, V>, request: FastifyRequest, reply: FastifyReply) {
  const caller = request.principal as Caller;
  const idempotencyKey = route.idempotencyHeader ? readIdempotencyKey(request, route.idempotencyHeader) : undefined;
  const { operation, variables } = readCall(route as RestRoute<Caller, unknown>, request, caller);
  request.restExecuting = true;
  const context = {
    principal: caller,
    requestId: request.id,
    log: request.log,
    client: request.client,
    idempotencyKey,
    lastEventId: lastEventIdOf(request),
    // A list's items' own rules are left to each item (list-variables.ts): those variables are not all checked.
    variablesChecked: !route.list,
    slotHeld: route.holdSlot !== undefined,
  };
  if (operation.type === 'subscription')
    return sendStream(reply, deps.subscribeOperation, { operation, variables, context, stream: route.stream! });
  if (route.download && acceptsMediaType(request.headers.accept, route.download.mediaType))
    return reply.type(route.download.mediaType).send(await route.download.open(deps.services, context, variables));
  const { data, error } = await deps.executeOperation(operation.document, variables, context);
  if (error) throw error;
  // The operation's root field, as the route's document selects it.
  const value = (data?.[operation.rootField] ?? null) as V;
  if (route.responseHeaders)
    for (const name in route.responseHeaders) {
      const headerValue = route.responseHeaders[name].value(value);
      if (headerValue !== undefined) reply.header(name, headerValue);
    }
  return reply.status(route.status ?? 200).send(route.respond(value));
}

/** Whether an Accept header names `mediaType` (parameters aside). */
const acceptsMediaType = (accept: string | undefined, mediaType: string) =>
  (accept ?? '').split(',').some((part) => part.split(';')[0].trim().toLowerCase() === mediaType);

/** A refusal the route's `onRefused` is told of: any but the rate window's (and none for an answered request). */
const isRefusalAfterWindow = (errorCode: string | undefined): errorCode is string =>
  errorCode !== undefined && errorCode !== 'rate_limited';

/** `onSend`, for a route told of refusals: before the answer leaves, so a caller that has its refusal can already find it recorded. */
function refusalStage<C extends Caller>(
  services: Services,
  route: RestRoute<C, unknown>,
  onRefused: NonNullable<RestRoute<C>['onRefused']>,
) {
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const caller = request.principal;
    if (caller && caller.type !== 'anonymous' && route.credential.serves.includes(caller.type as C['type'])) {
      if (!request.restExecuting && isRefusalAfterWindow(request.errorCode))
        await onRefused(services, {
          caller: caller as C,
          kind: request.errorCode,
          startedAt: request.restStartedAt ?? performance.now(),
        }).catch((error) => request.log.error({ err: error }, `could not record a refusal of ${route.path}`));
    }
    return payload;
  };
}

/** Registers a declared REST route, and 405 for its other methods. */
export function registerRestRoute<C extends Caller, V>(app: FastifyInstance, deps: RestDeps, route: RestRoute<C, V>) {
  registerRestRoutes(app, deps, [route as unknown as RestRoute<Caller>]);
}

/** Registers declared REST routes, and 405 for the other methods of each of their paths (routes may share a path). */
export function registerRestRoutes(app: FastifyInstance, deps: RestDeps, routes: RestRoute<Caller>[]) {
  const methodsByPath = new Map<string, string[]>();
  for (const route of routes) {
    registerRoute(app, deps, route);
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
  }
  for (const [path, methods] of methodsByPath) allowOnly(app, path, methods);
}

function registerRoute<C extends Caller, V>(app: FastifyInstance, deps: RestDeps, route: RestRoute<C, V>) {
  const generic = route as unknown as RestRoute<Caller, V>;
  registered.set(app, [...registeredRestRoutes(app), generic as RestRoute<Caller>]);
  app.route({
    method: route.method,
    url: route.path,
    ...(route.bodyLimit && { bodyLimit: route.bodyLimit }),
    ...(route.textBodies && { config: { textBodies: Object.keys(route.textBodies) } }),
    onRequest: callerStage(deps.services, route as RestRoute<C, unknown>),
    ...(route.onRefused && { onSend: refusalStage(deps.services, route as RestRoute<C, unknown>, route.onRefused) }),
    handler: (request, reply) => runCall(deps, generic, request, reply),
  });
}
