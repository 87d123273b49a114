import type { GraphQLSchema } from 'graphql';
import { GraphQLError, type DocumentNode } from 'graphql';
import { createYoga, isAsyncIterable, type GraphiQLOptions, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { LRUCache } from 'lru-cache';
import { createContext, releaseContext, type Context, type RequestContext, type Services } from '../../schema/context.js';
import { maskError, useContractErrorCodes } from './graphql-errors.js';
import { persistedDocuments } from '../gateway/gateway-call.route.js';
import { BATCHING_ENABLED, useGraphqlLimits } from './limits.js';
import { useIntrospectionBudget } from './introspection-budget.js';
import type { CompiledDocuments } from './compiled-execution.js';
import { useGraphqlStreams } from '../streams/graphql-stream.js';
import { withSchemaOnKey } from './graphiql-schema-on-key.js';

export type Yoga = YogaServerInstance<RequestContext, Context>;

/** Parsed documents kept for reuse, bounded in bytes too, since a parsed document outweighs its text (docs/scaling.md). */
export const DOCUMENT_CACHE_MAX_ENTRIES = 1000;
export const DOCUMENT_CACHE_MAX_BYTES = 16 * 1024 * 1024;
const PARSED_BYTES_PER_CHAR = 128;
/** Parse errors are kept too (a repeated bad document fails fast); each weighs its text and a little. */
const ERROR_CACHE_MAX_BYTES = 4 * 1024 * 1024;

function boundedParseCaches() {
  const documentCache = new LRUCache<string, DocumentNode>({
    max: DOCUMENT_CACHE_MAX_ENTRIES,
    maxSize: DOCUMENT_CACHE_MAX_BYTES,
    sizeCalculation: (_document, text) => Math.max(1, text.length * PARSED_BYTES_PER_CHAR),
  });
  const errorCache = new LRUCache<string, Error>({
    max: DOCUMENT_CACHE_MAX_ENTRIES,
    maxSize: ERROR_CACHE_MAX_BYTES,
    sizeCalculation: (_error, text) => 1024 + text.length * 2,
  });
  // Validation results are kept by Yoga per parsed document (a WeakMap): bounded by the cache above.
  return { documentCache, errorCache, validationCache: true };
}

/** GraphiQL outside production, every asset inlined: nothing loads from another host, so a typed key goes nowhere else. */
export const GRAPHIQL_KEY_NOTE = 'Put your key in the Headers tab below';
const GRAPHIQL_OPTIONS = {
  title: 'CRM developer API: GraphiQL',
  defaultQuery: `# ${GRAPHIQL_KEY_NOTE}:
#   {"Authorization": "Bearer gk_..."}
# (a gateway key gk_…, a skip trace key stk_…, or the platform token).
# Keys are secrets: use this page on your own machine only.

query Feed {
  notifications(limit: 5) {
    total
    notifications { id notificationType title isSeen createdAt }
  }
}
`,
  // Open at the headers tab, which is where the key goes; headers are never written to storage.
  // The schema is fetched once a key is there (graphiql-schema-on-key.ts).
  defaultEditorToolsVisibility: 'headers' as const,
  shouldPersistHeaders: false,
};
// The page's module weighs several MB: loaded at the page's first request, never at start-up.
let graphiqlPage: Promise<string> | undefined;
const renderLocalGraphiQL = (options: GraphiQLOptions) =>
  (graphiqlPage ??= import('@graphql-yoga/render-graphiql')
    .then(({ renderGraphiQL }) => withSchemaOnKey(renderGraphiQL(options)))
    .catch((error: unknown) => {
      graphiqlPage = undefined;
      throw error;
    }));

/** Each execution's context released once its result is complete (`releaseContext`); subscriptions keep theirs while open. */
const useReleaseContext = (): Plugin => ({
  onExecute: () => ({
    onExecuteDone: ({ args, result }) => {
      if (!isAsyncIterable(result)) return releaseContext(args.contextValue);
      return { onEnd: () => releaseContext(args.contextValue) };
    },
  }),
});

export function createYogaServer(schema: GraphQLSchema, services: Services, compiled: CompiledDocuments): Yoga {
  return createYoga<RequestContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: services.config.env !== 'production' && GRAPHIQL_OPTIONS,
    renderGraphiQL: renderLocalGraphiQL,
    landingPage: false,
    logging: services.log.child({ component: 'yoga' }),
    context: (request) =>
      createContext(
        {
          principal: request.principal,
          requestId: request.requestId,
          log: request.log,
          client: request.client,
          lastEventId: request.lastEventId,
        },
        services,
      ),
    maskedErrors: { maskError: (error) => maskError(error, services.log) },
    // One operation per request; see BATCHING_ENABLED for why. An array body gets BAD_USER_INPUT.
    batching: BATCHING_ENABLED,
    parserAndValidationCache: boundedParseCaches(),
    // The API is server-to-server: no CORS headers, so browsers are not invited to call it with keys.
    cors: false,
    plugins: [
      useContractErrorCodes(),
      useReleaseContext(),
      useGraphqlStreams(services.log),
      // Repeated documents run compiled (compiled-execution.ts); the rest on graphql-js.
      compiled.plugin,
      // At parse and validate time: the REST routes' pre-validated documents never meet them.
      ...useGraphqlLimits(),
      // A 400 whatever the Accept header: the request is refused, not a result with errors.
      useIntrospectionBudget((message) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } })),
      // Internal tools may send any operation, or a `documentId` of the gateway's persisted documents.
      usePersistedOperations({
        allowArbitraryOperations: true,
        extractPersistedOperationId: (params) => {
          const raw = params as { documentId?: unknown; extensions?: { persistedQuery?: { sha256Hash?: unknown } } };
          const id = raw.documentId ?? raw.extensions?.persistedQuery?.sha256Hash;
          return typeof id === 'string' ? id : null;
        },
        getPersistedOperation: (documentId) => persistedDocuments.byHash.get(documentId) ?? null,
        customErrors: {
          keyNotFound: {
            message: 'The request needs "query" (a GraphQL document) or "documentId" (a persisted document id).',
            extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
          },
          notFound: {
            message: 'No persisted document has this documentId.',
            extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
          },
        },
      }),
    ],
  });
}
