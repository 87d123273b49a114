import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Logger } from 'pino';
import { AppError, ERRORS, isGraphqlErrorCode, type ErrorKind, type GraphqlErrorCode } from '../../common/errors.js';
import { containsNul, NUL_MESSAGE } from '../../common/nul.js';
import { BATCHING_ENABLED } from './limits.js';

/** Errors in GraphQL's shape for `/graphql` and the REST executor; codes from the one table (common/errors.ts). */

/** Expected errors keep their code; anything else is logged and masked. Unchanged errors are returned as is, since Yoga logs every one it replaces. */
export function maskError(error: unknown, requestLog: Pick<Logger, 'error'>): GraphQLError {
  // Yoga parses the `variables` and `extensions` of GET (and form-encoded) requests with JSON.parse,
  // before any GraphQL runs: a SyntaxError that reaches us unwrapped is the caller's input.
  if (error instanceof SyntaxError) {
    return new GraphQLError('variables and extensions must be JSON objects.', {
      extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
    });
  }
  if (error instanceof GraphQLError) {
    const original = error.originalError;
    if (original instanceof AppError) {
      // A resolver's AppError, located: already the AppError's message and extensions.
      if (error.message === original.message && error.extensions === original.extensions) return error;
      return new GraphQLError(original.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: original.extensions,
        originalError: original,
      });
    }
    if (!original || original instanceof GraphQLError) {
      if (error.extensions?.code) return error;
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        extensions: { ...error.extensions, code: 'BAD_USER_INPUT' },
      });
    }
  }
  requestLog.error(
    { err: error instanceof GraphQLError ? (error.originalError ?? error) : error },
    'unexpected error in GraphQL execution',
  );
  return new GraphQLError('Unexpected error.', { extensions: { code: ERRORS.internal_error.graphql } });
}

/** Extensions that describe our internals rather than the caller's request (Yoga adds `originalError` to some request errors). */
const INTERNAL_EXTENSIONS = ['originalError', 'stack', 'exception'];

/** Yoga's own request-error codes become BAD_USER_INPUT; internal extensions are dropped. */
export function withContractErrorCodes(errors: readonly GraphQLError[]): GraphQLError[] {
  return errors.map((error) => {
    const code = error.extensions?.code;
    const leaks = INTERNAL_EXTENSIONS.some((key) => error.extensions && key in error.extensions);
    if (isGraphqlErrorCode(code) && !leaks) return error;
    const extensions: Record<string, unknown> = { ...error.extensions, code: isGraphqlErrorCode(code) ? code : 'BAD_USER_INPUT' };
    for (const key of INTERNAL_EXTENSIONS) delete extensions[key];
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
      extensions,
    });
  });
}

/** `withContractErrorCodes` on every single result Yoga answers. */
export const useContractErrorCodes = (): Plugin => ({
  onResultProcess({ result, setResult }) {
    if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return;
    setResult({ ...result, errors: withContractErrorCodes(result.errors) });
  },
});

// ---------------------------------------------------------------------------
// Refusals answered by the `/graphql` route itself, before or instead of Yoga.

export interface GraphqlRefusal {
  status: number;
  body: { errors: Array<{ message: string; extensions: { code: GraphqlErrorCode } }> };
}

export const graphqlRefusal = (status: number, message: string, code: GraphqlErrorCode = 'BAD_USER_INPUT'): GraphqlRefusal => ({
  status,
  body: { errors: [{ message, extensions: { code } }] },
});

/** Our error on `/graphql`: a malformed request is 400 there (GraphQL over HTTP), where REST says 422. */
export function refusalOf(kind: ErrorKind, message: string): GraphqlRefusal {
  const { status, graphql } = ERRORS[kind];
  return graphqlRefusal(status === 422 ? 400 : status, message, graphql);
}

/** Not one request object: arrays are batches (off); scalars and `{}` would get a misleading "invalid JSON" from Yoga. */
export function refuseBody(method: string, body: unknown): GraphqlRefusal | null {
  if (method !== 'POST') return null;
  if (Array.isArray(body) && !BATCHING_ENABLED) {
    return graphqlRefusal(400, 'Batching is not supported: send one operation per request (a JSON object, not an array).');
  }
  if (typeof body !== 'object' || body === null || Object.keys(body).length === 0) {
    return graphqlRefusal(
      400,
      'The body must be a JSON object with "query" (a GraphQL document) or "documentId" (a persisted document id).',
    );
  }
  return null;
}

/** Yoga parses GET `variables`/`extensions` with bare JSON.parse, so a malformed one is refused here, named. */
export function refuseQueryParams(url: string): GraphqlRefusal | null {
  const search = url.includes('?') ? new URLSearchParams(url.slice(url.indexOf('?') + 1)) : null;
  for (const name of ['variables', 'extensions']) {
    const raw = search?.get(name);
    if (!raw) continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return graphqlRefusal(400, `The ${name} parameter is not valid JSON.`);
    }
    if (value !== null && (typeof value !== 'object' || Array.isArray(value)))
      return graphqlRefusal(400, `The ${name} parameter must be a JSON object.`);
    if (containsNul(value)) return graphqlRefusal(400, NUL_MESSAGE);
  }
  return null;
}

/** Errors raised before Yoga runs (credential, window, body parser, body limit), in GraphQL's shape rather than REST's. */
export function refusalForHostError(error: unknown, bodyLimitBytes: number): GraphqlRefusal | null {
  const { code, statusCode } = error as { code?: string; statusCode?: number };
  if (error instanceof AppError) {
    if (ERRORS[error.kind].status >= 500) return null;
    if (error.kind === 'payload_too_large') return refusalOf('payload_too_large', bodyTooLarge(bodyLimitBytes));
    if (error.kind === 'unsupported_media_type') return refusalOf('unsupported_media_type', 'Send the request as application/json.');
    return refusalOf(error.kind, error.message || 'The request could not be read.');
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return refusalOf('unsupported_media_type', 'Send the request as application/json.');
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return refusalOf('payload_too_large', bodyTooLarge(bodyLimitBytes));
  if (statusCode && statusCode >= 400 && statusCode < 500) return graphqlRefusal(400, 'The request could not be read.');
  return null;
}

const bodyTooLarge = (bytes: number) => `The body is too large (${Math.round(bytes / 1024 / 1024)} MiB on /graphql).`;

/** Yoga's body-less refusals (406 for an unsatisfiable Accept, 415 for an unknown Content-Type). */
export function refusalForEmptyResponse(status: number): GraphqlRefusal | null {
  if (status === 406) return graphqlRefusal(406, 'The Accept header allows none of application/json, application/graphql-response+json.');
  if (status === 415) return graphqlRefusal(415, 'Send the request as application/json.');
  return null;
}
