import { type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { AppError } from '../../common/errors.js';
import { createContext, type RequestContext, type Services } from '../../schema/context.js';
import { maskError } from '../graphql/graphql-errors.js';
import { sharedSubscribe } from '../streams/shared-subscribe.js';

/** The operation's data, or its first error as an AppError (masked when unexpected). */
export type OperationResult = { data: Record<string, unknown> | null; error: AppError | null };

/** Runs one of the REST routes' fixed documents with its variables for one request. */
export type OperationExecutor = (
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  request: RequestContext,
) => Promise<OperationResult>;

/**
 * How the REST routes call into the one schema: their documents are fixed and validated at
 * start-up, so each is compiled once (graphql-jit) and then called per request with the same
 * context and error masking as /graphql. They skip Yoga's HTTP pipeline (request parsing, parse
 * and validate caches, limits, result processing), none of which applies to a persisted document,
 * and whose per-request hooks were the largest share of a gateway call's allocations.
 */
export function createOperationExecutor(schema: GraphQLSchema, services: Services): OperationExecutor {
  const compiled = new WeakMap<DocumentNode, CompiledQuery>();
  const compile = (document: DocumentNode): CompiledQuery => {
    let query = compiled.get(document);
    if (!query) {
      const result = compileQuery(schema, document);
      if (!isCompiledQuery(result)) throw new Error(`Cannot compile a REST operation: ${result.errors?.map((e) => e.message).join('; ')}`);
      compiled.set(document, (query = result));
    }
    return query;
  };
  return async (document, variableValues, request) => {
    const result = await compile(document).query(undefined, createContext(request, services), variableValues);
    const error = result.errors?.[0];
    return {
      data: (result.data as Record<string, unknown> | null | undefined) ?? null,
      error: error ? AppError.from(maskError(error, services.log)) : null,
    };
  };
}

/** A subscription's results, or the error that refused it as it opened. */
type SubscriptionResult = { events: AsyncIterator<ExecutionResult>; error: null } | { events: null; error: AppError };

/** Opens one of the REST routes' fixed subscription documents for one request. */
export type OperationSubscriber = (
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  request: RequestContext,
) => Promise<SubscriptionResult>;

/**
 * Subscriptions run on graphql-js (opened once per stream, so nothing is gained by compiling them),
 * each event executed once for all the streams that read it alike (shared-subscribe.ts).
 */
export function createOperationSubscriber(schema: GraphQLSchema, services: Services): OperationSubscriber {
  return async (document, variableValues, request) => {
    const result = await sharedSubscribe({ schema, document, contextValue: createContext(request, services), variableValues });
    if (Symbol.asyncIterator in result) return { events: result[Symbol.asyncIterator](), error: null };
    const error = result.errors?.[0];
    return { events: null, error: AppError.from(error ? maskError(error, services.log) : new Error('The subscription did not open.')) };
  };
}
