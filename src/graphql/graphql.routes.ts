import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { ApiError } from '../infra/http/api-error.js';
import { GRAPHQL_BODY_LIMIT_BYTES } from '../infra/http/server.js';
import { printedSchema } from './schema.js';
import type { Yoga } from './yoga.js';

/**
 * `POST /graphql` for internal tools (and GraphiQL outside production), and `GET /schema.graphql`.
 * Both need a valid credential: introspection and the SDL are for authenticated callers only.
 */
export function registerGraphqlRoutes(app: FastifyInstance, deps: { services: Services; yoga: Yoga }) {
  const { services, yoga } = deps;
  const authenticate = (request: FastifyRequest) => services.authenticator.authenticate(services.orm.em.fork(), request.headers.authorization);

  const unauthenticated = (reply: FastifyReply, message: string) =>
    reply.status(401).send({ errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] });

  app.route({
    url: '/graphql',
    method: ['GET', 'POST', 'OPTIONS'],
    bodyLimit: GRAPHQL_BODY_LIMIT_BYTES,
    handler: async (request, reply) => {
      const principal = await authenticate(request);
      const wantsGraphiql = request.method === 'GET' && services.config.env !== 'production' && (request.headers.accept ?? '').includes('text/html');
      if (principal === null) return unauthenticated(reply, 'The credential is not valid.');
      if (principal.type === 'anonymous' && !wantsGraphiql) return unauthenticated(reply, 'A credential is required (Authorization: Bearer <key>).');

      const response = await yoga.handleNodeRequestAndResponse(request, reply, { principal, requestId: request.id, log: request.log });
      response.headers.forEach((value, key) => reply.header(key, value));
      reply.status(response.status);
      return reply.send(response.body);
    },
  });

  app.get('/schema.graphql', async (request, reply) => {
    const principal = await authenticate(request);
    if (!principal || principal.type === 'anonymous') throw new ApiError('invalid_key', 'A valid credential is required to read the schema.');
    return reply.type('text/plain; charset=utf-8').send(printedSchema);
  });
}
