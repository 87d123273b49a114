import type { ExecutionResult, GraphQLError } from 'graphql';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { processRegularResult } from 'graphql-yoga';
import { Counter } from 'prom-client';
import { containsNul } from '../../common/nul.js';
import { createContext, releaseContext, type RequestContext, type Services } from '../../schema/context.js';
import type { CompiledDocuments } from './compiled-execution.js';
import { maskError, withContractErrorCodes } from './graphql-errors.js';
import type { Yoga } from './yoga.js';

/**
 * The common `/graphql` POST of a document Yoga already parsed, validated and compiled, run without
 * Yoga's HTTP pipeline but with its context, masking, codes and serialization. Anything else goes to
 * Yoga; test/graphql/fast-path.test.ts compares both paths.
 */
export type GraphqlFastPath = (request: FastifyRequest, reply: FastifyReply, context: RequestContext) => Promise<boolean>;

/** The params Yoga's own parameter check accepts; a body with anything else goes to Yoga, which answers for it. */
const FAST_KEYS = new Set(['query', 'variables', 'operationName']);
/** What Yoga sends as the response media type for each Accept header this path serves (use-result-processor.ts). */
const MEDIA_TYPE_FOR_ACCEPT = new Map<string | undefined, string>([
  [undefined, 'application/json'],
  ['*/*', 'application/json'],
  ['application/json', 'application/json'],
  ['application/graphql-response+json', 'application/graphql-response+json'],
]);
const JSON_CONTENT_TYPE = /^application\/json(?:;\s*charset=utf-8)?$/i;

interface FastParams {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

function fastParams(body: unknown): FastParams | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { query, variables, operationName } = body as Record<string, unknown>;
  for (const key in body) if (!FAST_KEYS.has(key)) return null;
  if (typeof query !== 'string') return null;
  if (variables !== undefined && (typeof variables !== 'object' || variables === null || Array.isArray(variables))) return null;
  if (operationName !== undefined && typeof operationName !== 'string') return null;
  return { query, variables: variables as Record<string, unknown> | undefined, operationName };
}

export function createGraphqlFastPath(deps: { services: Services; yoga: Yoga; compiled: CompiledDocuments }): GraphqlFastPath {
  const { services, yoga, compiled } = deps;
  // Yoga's mask logs, on its own logger, each error it replaces (server.ts of graphql-yoga): the same here.
  const yogaLog = services.log.child({ component: 'yoga' });
  const mask = (error: GraphQLError) => {
    const masked = maskError(error, services.log);
    if (masked !== error) yogaLog.error(error);
    return masked;
  };
  const served = new Counter({
    name: 'crm_graphql_fast_path_requests_total',
    help: '/graphql requests answered by the route with an already validated, compiled document, without Yoga.',
    registers: [services.metrics],
  });

  return async (request, reply, context) => {
    if (request.method !== 'POST') return false;
    const mediaType = MEDIA_TYPE_FOR_ACCEPT.get(request.headers.accept);
    if (mediaType === undefined || !JSON_CONTENT_TYPE.test(request.headers['content-type'] ?? '')) return false;
    const params = fastParams(request.body);
    if (!params || containsNul(params.variables)) return false;
    const entry = compiled.lookup(params.query, params.operationName);
    if (!entry) return false;

    served.inc();
    let result: ExecutionResult;
    const contextValue = createContext(context, services);
    try {
      result = await entry.query.query(undefined, contextValue, params.variables ?? {});
    } catch (error) {
      // graphql-jit reports resolver errors in its result; a throw is our bug, masked as Yoga masks it.
      result = { errors: [mask(error as GraphQLError)] };
    } finally {
      releaseContext(contextValue);
    }
    if (!result.errors?.length) {
      reply.status(200).header('content-type', `${mediaType}; charset=utf-8`).send(JSON.stringify(result));
      return true;
    }
    // Errors: Yoga's own masking, codes and result processor, so status and body are Yoga's.
    const response = processRegularResult(
      { ...result, errors: withContractErrorCodes(result.errors.map(mask)) },
      yoga.fetchAPI,
      mediaType,
    ) as Response;
    response.headers.forEach((value, key) => reply.header(key, value));
    reply.status(response.status).send(await response.text());
    return true;
  };
}
