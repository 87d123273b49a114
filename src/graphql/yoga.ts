import { GraphQLError } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Services } from '../services.js';
import { createContext, type Context, type RequestContext } from './context.js';
import { AppError } from './errors.js';
import { schema } from './schema.js';
import { persistedDocuments } from '../gateway/persisted-documents.js';

export type Yoga = YogaServerInstance<RequestContext, Context>;

/**
 * Expected errors keep their `extensions.code`; GraphQL's own request errors (syntax,
 * validation, variable coercion) become BAD_USER_INPUT; anything else is logged and masked.
 */
export function maskError(error: unknown, requestLog: Services['log']): GraphQLError {
  if (error instanceof GraphQLError) {
    const original = error.originalError;
    if (original instanceof AppError) {
      return new GraphQLError(original.message, { nodes: error.nodes, path: error.path, extensions: original.extensions });
    }
    if (!original || original instanceof GraphQLError) {
      if (error.extensions?.code) return error;
      return new GraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: { ...error.extensions, code: 'BAD_USER_INPUT' } });
    }
  }
  requestLog.error({ err: error instanceof GraphQLError ? (error.originalError ?? error) : error }, 'unexpected error in GraphQL execution');
  return new GraphQLError('Unexpected error.', { extensions: { code: 'INTERNAL' } });
}

const CONTRACT_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'INSUFFICIENT_CREDITS', 'FEATURE_UNAVAILABLE', 'RATE_LIMITED', 'TIMEOUT', 'INTERNAL']);

/** Yoga's own request-error codes (GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, …) become the contract's BAD_USER_INPUT. */
const useContractErrorCodes = (): Plugin => ({
  onResultProcess({ result, setResult }) {
    if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return;
    const errors = result.errors.map((error) => {
      const code = error.extensions?.code;
      if (typeof code === 'string' && CONTRACT_CODES.has(code)) return error;
      return new GraphQLError(error.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: { ...error.extensions, code: 'BAD_USER_INPUT' } });
    });
    setResult({ ...result, errors });
  },
});

export function createYogaServer(services: Services): Yoga {
  return createYoga<RequestContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: services.config.env !== 'production',
    landingPage: false,
    logging: services.log.child({ component: 'yoga' }),
    context: (request) => createContext({ principal: request.principal, requestId: request.requestId, log: request.log, skipTraceAdmitted: request.skipTraceAdmitted }, services),
    maskedErrors: { maskError: (error) => maskError(error, services.log) },
    plugins: [
      useContractErrorCodes(),
      // Internal tools may send any operation, or a `documentId` of the gateway's persisted documents.
      usePersistedOperations({
        allowArbitraryOperations: true,
        extractPersistedOperationId: (params) => {
          const raw = params as { documentId?: unknown; extensions?: { persistedQuery?: { sha256Hash?: unknown } } };
          const id = raw.documentId ?? raw.extensions?.persistedQuery?.sha256Hash;
          return typeof id === 'string' ? id : null;
        },
        getPersistedOperation: (documentId) => persistedDocuments.byHash.get(documentId) ?? null,
      }),
    ],
  });
}
