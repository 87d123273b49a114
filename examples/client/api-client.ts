/**
 * A small typed client over fetch for the gateway (`POST /api/v1/call`) and the skip trace route.
 * The types come from `npm run codegen` (`__generated__/gateway-operations.ts`): each operationId's
 * variables and the `data` it answers with, so a wrong variable or a misspelt field fails to compile.
 *
 * Keys are secrets for servers: use this from a server or a script, never from a browser.
 */
import type {
  GatewayOperationId,
  GatewayOperations,
  GatewayStreamOperationId,
  SkipTraceMutation,
  SkipTraceInput,
} from './__generated__/gateway-operations.js';

export type { GatewayOperationId, GatewayOperations, GatewayStreamOperationId, SkipTraceInput };
/** The operationIds answered with one JSON body. */
export type GatewayCallOperationId = Exclude<GatewayOperationId, GatewayStreamOperationId>;
/** What an operation answers with (`data`); for a stream, what each event carries. */
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

/** What `{"error": {...}}` holds. */
interface ErrorBody {
  code?: string;
  message?: string;
  details?: Array<{ path: string; message: string }>;
  requestId?: string;
}

/** The error body (of a response, or of a stream's last event) as an `ApiError`. */
function apiError(status: number, headers: Headers, error: ErrorBody | undefined, fallbackMessage: string): ApiError {
  const retryAfter = headers.get('retry-after');
  return new ApiError(
    status,
    error?.code ?? 'unknown',
    error?.message ?? fallbackMessage,
    error?.details,
    error?.requestId ?? headers.get('x-request-id') ?? undefined,
    retryAfter === null ? undefined : Number(retryAfter),
  );
}

function request(options: ClientOptions, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal) {
  return fetch(`${options.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  });
}

async function post<T>(options: ClientOptions, path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
  const response = await request(options, path, body, headers);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw apiError(response.status, response.headers, parsed?.error, text);
  return parsed as T;
}

/**
 * The Server-Sent Events of a response body, as `{event, data}` (the `data:` lines joined by
 * newlines); comment lines (`:`, the keep-alives) and other fields are skipped.
 */
async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  let event = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return; // an event not ended by a blank line is dropped, as the SSE spec says
      pending += decoder.decode(value, { stream: true });
      // Lines end with \n, \r\n or \r; a trailing \r waits for the next chunk, which may start with its \n.
      const complete = pending.endsWith('\r') ? pending.length - 1 : pending.length;
      const lines = pending.slice(0, complete).split(/\r\n|\r|\n/);
      pending = lines.pop()! + pending.slice(complete);
      for (const line of lines) {
        if (line === '') {
          if (event || data.length) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = fieldValue;
        else if (field === 'data') data.push(fieldValue);
      }
    }
  } finally {
    // Also when the consumer stops early: the connection is closed, not left open.
    await reader.cancel().catch(() => undefined);
  }
}

/** Variables may be left out for an operation whose variables are all optional. */
type VariablesArgument<Id extends GatewayOperationId> =
  Record<string, never> extends GatewayOperations[Id]['variables']
    ? [variables?: GatewayOperations[Id]['variables']]
    : [variables: GatewayOperations[Id]['variables']];

export interface WatchOptions {
  /** Aborting it closes the stream: the iteration ends (without an error). */
  signal?: AbortSignal;
}

/** The gateway, typed per operationId: resolves to the operation's `data`, rejects with an `ApiError`. */
export function gatewayClient(options: ClientOptions) {
  return {
    async callOperation<Id extends GatewayCallOperationId>(operationId: Id, ...[variables]: VariablesArgument<Id>) {
      const body = await post<{ data: OperationData<Id> }>(options, '/api/v1/call', {
        operationId,
        variables: variables ?? {},
      });
      return body.data;
    },

    /**
     * Opens a stream operation (`watchNotifications`): resolves once the service accepted it (the
     * response headers arrived; a refusal rejects with its `ApiError`, e.g. 429 `concurrency_limit`)
     * to the stream's events, each the operation's `data`. The iteration ends when the service ends the
     * stream (`event: complete`) or `signal` aborts; an error event (`{"error": {...}}`, e.g.
     * `invalid_key` once the key is revoked) throws its `ApiError`. Stopping the loop closes the stream.
     * Events are not replayed: after reopening, re-read what the events would have told you. Until
     * its iteration starts, the stream stays open: abort `signal` to close one never iterated.
     */
    async watch<Id extends GatewayStreamOperationId>(
      operationId: Id,
      variables: GatewayOperations[Id]['variables'] = {},
      { signal }: WatchOptions = {},
    ): Promise<AsyncGenerator<OperationData<Id>, void, undefined>> {
      const response = await request(options, '/api/v1/call', { operationId, variables }, { accept: 'text/event-stream' }, signal);
      if (!response.ok || !response.body) {
        const text = await response.text();
        throw apiError(response.status, response.headers, text ? JSON.parse(text)?.error : undefined, text);
      }
      const body = response.body;
      return (async function* events() {
        try {
          for await (const { event, data } of serverSentEvents(body)) {
            if (event === 'complete') return;
            if (event !== 'next') continue;
            const parsed = JSON.parse(data);
            if (parsed.error) throw apiError(response.status, response.headers, parsed.error, data);
            yield parsed.data as OperationData<Id>;
          }
        } catch (error) {
          if (signal?.aborted) return;
          throw error;
        }
      })();
    },
  };
}

/** `POST /api/v1/skiptrace`: the body is the `skipTrace` mutation's input, the answer its result. */
export function skipTraceClient(options: ClientOptions) {
  return {
    trace: (input: SkipTraceInput, headers?: Record<string, string>) => post<SkipTraceResult>(options, '/api/v1/skiptrace', input, headers),
  };
}
