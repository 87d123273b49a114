import type { FastifyInstance } from 'fastify';
import { allowOnly } from '../http/server.js';
import type { DocumentedRoute } from '../http/documented-route.js';

/** The same paths the start-up banner prints. */
export const SERVICE_INDEX = {
  name: 'CRM developer API',
  docs: '/docs',
  openapi: '/openapi.json',
  graphql: '/graphql',
  operations: '/api/v1/operations',
} as const;

/** Public. */
export function registerServiceIndex(app: FastifyInstance) {
  app.get('/', async () => SERVICE_INDEX);
  allowOnly(app, '/', ['GET']);
}

const PATH = { type: 'string' } as const;

export const serviceIndexReference: DocumentedRoute = {
  method: 'GET',
  path: '/',
  summary: 'Where to look: the API reference, the OpenAPI document, GraphQL and operation discovery. Public.',
  description:
    'Public. A new caller starts here: `/docs` is the API reference, `/openapi.json` its document, `/graphql` GraphiQL in a browser.',
  tag: 'Service',
  responses: {
    200: {
      description: 'The service’s name and the paths of its reference, OpenAPI document, GraphQL endpoint and operation discovery.',
      schema: {
        type: 'object',
        required: ['name', 'docs', 'openapi', 'graphql', 'operations'],
        properties: { name: PATH, docs: PATH, openapi: PATH, graphql: PATH, operations: PATH },
      },
    },
  },
};
