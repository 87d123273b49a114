/**
 * A small typed client over fetch for the gateway (`POST /api/v1/call`) and the skip trace route.
 * The types come from `npm run codegen` (`__generated__/gateway-operations.ts`): each operationId's
 * variables and the `data` it answers with, so a wrong variable or a misspelt field fails to compile.
 *
 * Keys are secrets for servers: use this from a server or a script, never from a browser.
 */
import type { GatewayOperationId, GatewayOperations, SkipTraceMutation, SkipTraceInput } from './__generated__/gateway-operations.js';

export type { GatewayOperationId, GatewayOperations, SkipTraceInput };
/** What an operation answers with (`data`). */
export type OperationData<Id extends GatewayOperationId> = GatewayOperations[Id]['data'];
/** What `POST /api/v1/skiptrace` answers with on 200. */
export type SkipTraceResult = SkipTraceMutation['skipTrace'];

/** One error body of the API: `{"error": {code, message, details?, requestId}}`, with the response's status and headers. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Array<{ path: string; message: string }> | undefined,
    /** The request's id (also in `X-Request-Id`): quote it when asking for support. */
    readonly requestId: string | undefined,
    /** `Retry-After` in seconds, on 429. */
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(`${status} ${code}: ${message}${requestId ? ` (request ${requestId})` : ''}`);
    this.name = 'ApiError';
  }
}

export interface ClientOptions {
  /** The service's base URL, e.g. http://localhost:4000. */
  apiUrl: string;
  /** A gateway key (`gk_…`) or a skip trace key (`stk_…`). */
  key: string;
}

/** `API_URL` (default http://localhost:4000) and the key in the named variable. */
export function optionsFromEnv(keyVariable: 'GATEWAY_KEY' | 'SKIPTRACE_KEY'): ClientOptions {
  const key = process.env[keyVariable];
  if (!key) throw new Error(`Set ${keyVariable} (the demo keys are printed at the first npm start).`);
  return { apiUrl: (process.env.API_URL ?? 'http://localhost:4000').replace(/\/+$/, ''), key };
}

async function post<T>(options: ClientOptions, path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await fetch(`${options.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    const error = parsed?.error ?? {};
    const retryAfter = response.headers.get('retry-after');
    throw new ApiError(
      response.status,
      error.code ?? 'unknown',
      error.message ?? text,
      error.details,
      error.requestId ?? response.headers.get('x-request-id') ?? undefined,
      retryAfter === null ? undefined : Number(retryAfter),
    );
  }
  return parsed as T;
}

/** Variables may be left out for an operation whose variables are all optional. */
type VariablesArgument<Id extends GatewayOperationId> =
  Record<string, never> extends GatewayOperations[Id]['variables']
    ? [variables?: GatewayOperations[Id]['variables']]
    : [variables: GatewayOperations[Id]['variables']];

/** The gateway, typed per operationId: resolves to the operation's `data`, rejects with an `ApiError`. */
export function gatewayClient(options: ClientOptions) {
  return {
    async callOperation<Id extends GatewayOperationId>(operationId: Id, ...[variables]: VariablesArgument<Id>) {
      const body = await post<{ data: OperationData<Id> }>(options, '/api/v1/call', {
        operationId,
        variables: variables ?? {},
      });
      return body.data;
    },
  };
}

/** `POST /api/v1/skiptrace`: the body is the `skipTrace` mutation's input, the answer its result. */
export function skipTraceClient(options: ClientOptions) {
  return {
    trace: (input: SkipTraceInput, headers?: Record<string, string>) => post<SkipTraceResult>(options, '/api/v1/skiptrace', input, headers),
  };
}
