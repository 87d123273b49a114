import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../schema/context.js';
import { identifyCaller, credentialGuard, rateLimitMessage } from '../credential-guard.js';
import { ANY_CALLER } from '../../schema/principal.js';
import { GRAPHQL_BODY_LIMIT_BYTES } from '../server.js';
import { selfOnlyContentSecurityPolicy } from '../content-security-policy.js';
import { lastEventIdOf } from '../streams/event-stream.js';
import {
  graphqlRefusal,
  refusalOf,
  refuseBody,
  refuseQueryParams,
  refusalForEmptyResponse,
  refusalForHostError,
  type GraphqlRefusal,
} from './graphql-errors.js';
import type { Yoga } from './yoga.js';
import type { GraphqlFastPath } from './fast-path.js';

/** GraphiQL's page (yoga.ts): its script, styles, workers and favicon are inline, and nothing else may load. */
const GRAPHIQL_CONTENT_SECURITY_POLICY = selfOnlyContentSecurityPolicy({ inlineScripts: true });

/** The answer to graphql-sse's single connection mode, which opens with a PUT. */
const SINGLE_CONNECTION_MODE_REFUSAL =
  "Use GET or POST on /graphql. Subscriptions over Server-Sent Events are served in graphql-sse's distinct connections mode only " +
  '(one request per subscription, e.g. createClient({ singleConnection: false })); its single connection mode (a PUT reserving a stream) is not supported.';

/**
 * `POST /graphql` for internal tools and `GET /schema.graphql`, both for valid credentials only;
 * every error, even before Yoga runs, in GraphQL's shape.
 */
export function registerGraphqlRoutes(
  app: FastifyInstance,
  deps: { services: Services; yoga: Yoga; fastPath: GraphqlFastPath; printedSchema: string },
) {
  const { services, yoga, fastPath, printedSchema } = deps;

  const refuse = (reply: FastifyReply, refusal: GraphqlRefusal) =>
    reply.status(refusal.status).type('application/json; charset=utf-8').send(refusal.body);
  const unauthenticated = (reply: FastifyReply, message: string) => refuse(reply, refusalOf('invalid_key', message));

  const errorHandler = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const refusal = refusalForHostError(error as { code?: string; statusCode?: number; message?: string }, GRAPHQL_BODY_LIMIT_BYTES);
    if (refusal) return refuse(reply, refusal);
    request.log.error({ err: error }, 'unexpected error on /graphql');
    return refuse(reply, graphqlRefusal(500, 'Unexpected error.', 'INTERNAL'));
  };

  app.route({
    url: '/graphql',
    method: ['GET', 'POST'],
    bodyLimit: GRAPHQL_BODY_LIMIT_BYTES,
    errorHandler,
    handler: async (request, reply) => {
      const { principal, decision } = await identifyCaller(services, request, reply, ANY_CALLER);
      if (!decision.allowed) return refuse(reply, refusalOf('rate_limited', rateLimitMessage(decision)));
      const wantsGraphiql =
        request.method === 'GET' && services.config.env !== 'production' && (request.headers.accept ?? '').includes('text/html');
      if (principal === null) return unauthenticated(reply, 'The credential is not valid.');
      if (principal.type === 'anonymous' && !wantsGraphiql)
        return unauthenticated(reply, 'A credential is required (Authorization: Bearer <key>).');

      const refusal = refuseBody(request.method, request.body) ?? (request.method === 'GET' ? refuseQueryParams(request.url) : null);
      if (refusal) return refuse(reply, refusal);

      const context = { principal, requestId: request.id, log: request.log, client: request.client, lastEventId: lastEventIdOf(request) };
      // A repeated, already validated and compiled document: answered as Yoga would, without it (fast-path.ts).
      if (await fastPath(request, reply, context)) return reply;
      const response = await yoga.handleNodeRequestAndResponse(request, reply, context);
      if (response.body === null) {
        const empty = refusalForEmptyResponse(response.status);
        if (empty) return refuse(reply, empty);
      }
      response.headers.forEach((value, key) => reply.header(key, value));
      if (response.headers.get('content-type')?.startsWith('text/html'))
        reply.header('Content-Security-Policy', GRAPHIQL_CONTENT_SECURITY_POLICY);
      reply.status(response.status);
      return reply.send(response.body);
    },
  });

  // Other methods on /graphql: 405 in GraphQL's shape (not the host's REST-shaped 404). A PUT is
  // graphql-sse's single connection mode reserving its stream: say which mode is served instead.
  app.route({
    url: '/graphql',
    method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    bodyLimit: GRAPHQL_BODY_LIMIT_BYTES,
    errorHandler,
    handler: async (request, reply) =>
      refuse(
        reply.header('Allow', 'GET, POST'),
        refusalOf('method_not_allowed', request.method === 'PUT' ? SINGLE_CONNECTION_MODE_REFUSAL : 'Use GET or POST on /graphql.'),
      ),
  });

  app.get('/schema.graphql', { onRequest: credentialGuard(services, ANY_CALLER) }, async (_request, reply) =>
    reply.type('text/plain; charset=utf-8').send(printedSchema),
  );
}
