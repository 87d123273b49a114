import { GraphQLError } from 'graphql';

export const GRAPHQL_ERROR_CODES = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'BAD_USER_INPUT',
  'NOT_FOUND',
  'CONFLICT',
  'INSUFFICIENT_CREDITS',
  'FEATURE_UNAVAILABLE',
  'RATE_LIMITED',
  'TIMEOUT',
  'INTERNAL',
] as const;
export type GraphqlErrorCode = (typeof GRAPHQL_ERROR_CODES)[number];

interface ErrorRow {
  status: number;
  graphql: GraphqlErrorCode;
  /** The kind that an error carrying only this code (graphql-js's, Pothos') maps back to. */
  fromGraphql?: true;
  /** Its message is ours, not the error's: the cause is logged, never shown. */
  masked?: true;
  headers?: Readonly<Record<string, string | number>>;
}

/** The only mapping between the REST and GraphQL error vocabularies; REST, HTTP host, Yoga masking and audit all read it. */
export const ERRORS = {
  invalid_key: { status: 401, graphql: 'UNAUTHENTICATED', fromGraphql: true },
  insufficient_credits: { status: 402, graphql: 'INSUFFICIENT_CREDITS', fromGraphql: true },
  insufficient_scope: { status: 403, graphql: 'FORBIDDEN', fromGraphql: true },
  feature_unavailable: { status: 403, graphql: 'FEATURE_UNAVAILABLE', fromGraphql: true },
  unknown_operation: { status: 404, graphql: 'NOT_FOUND' },
  not_found: { status: 404, graphql: 'NOT_FOUND', fromGraphql: true },
  method_not_allowed: { status: 405, graphql: 'BAD_USER_INPUT' },
  request_timeout: { status: 408, graphql: 'BAD_USER_INPUT' },
  conflict: { status: 409, graphql: 'CONFLICT', fromGraphql: true },
  // Skip trace Idempotency-Key: its first request is still in flight / it was used with another body.
  idempotency_key_in_use: { status: 409, graphql: 'CONFLICT' },
  payload_too_large: { status: 413, graphql: 'BAD_USER_INPUT' },
  unsupported_media_type: { status: 415, graphql: 'BAD_USER_INPUT' },
  invalid_request: { status: 422, graphql: 'BAD_USER_INPUT', fromGraphql: true },
  idempotency_key_reused: { status: 422, graphql: 'BAD_USER_INPUT' },
  rate_limited: { status: 429, graphql: 'RATE_LIMITED', fromGraphql: true },
  // A slot frees when any of the key's traces completes.
  concurrency_limit: { status: 429, graphql: 'RATE_LIMITED', headers: { 'Retry-After': 1 } },
  internal_error: { status: 500, graphql: 'INTERNAL', fromGraphql: true, masked: true },
  timeout: { status: 504, graphql: 'TIMEOUT', fromGraphql: true },
} as const satisfies Record<string, ErrorRow>;

export type ErrorKind = keyof typeof ERRORS;

const KINDS = Object.keys(ERRORS) as ErrorKind[];
const KIND_OF_GRAPHQL_CODE = new Map(
  KINDS.filter((kind) => (ERRORS[kind] as ErrorRow).fromGraphql).map((kind) => [ERRORS[kind].graphql, kind]),
);
for (const code of GRAPHQL_ERROR_CODES) if (!KIND_OF_GRAPHQL_CODE.has(code)) throw new Error(`ERRORS: no row stands for ${code}.`);

export const isGraphqlErrorCode = (value: unknown): value is GraphqlErrorCode =>
  (GRAPHQL_ERROR_CODES as readonly unknown[]).includes(value);

export interface ErrorDetail {
  path: string;
  message: string;
}

export const REPLAYED_HEADER = 'Idempotent-Replayed';

export const MASKED_MESSAGE = 'Unexpected error; retry.';

/** An expected failure, safe to show the caller; anything else thrown is masked as `internal_error` and logged. */
export class AppError extends GraphQLError {
  readonly details?: ErrorDetail[];

  constructor(
    readonly kind: ErrorKind,
    message: string,
    details?: ErrorDetail[],
    /** An Idempotency-Key replay: the id of the request whose answer this is. */
    readonly replayOf?: { requestId: string },
  ) {
    const code = ERRORS[kind].graphql;
    super(message, { extensions: details ? { code, details } : { code } });
    this.details = details;
  }

  get status(): number {
    return ERRORS[this.kind].status;
  }

  get headers(): Readonly<Record<string, string | number>> {
    const headers = (ERRORS[this.kind] as ErrorRow).headers ?? {};
    return this.replayOf ? { ...headers, [REPLAYED_HEADER]: 'true' } : headers;
  }

  /** graphql-js's own errors (validation, coercion) take their code's kind; uncoded ones are masked. */
  static from(error: { message: string; extensions?: Record<string, unknown>; originalError?: unknown }): AppError {
    if (error instanceof AppError) return error;
    if (error.originalError instanceof AppError) return error.originalError;
    const code = error.extensions?.code;
    const kind = isGraphqlErrorCode(code) ? KIND_OF_GRAPHQL_CODE.get(code)! : 'internal_error';
    const details = error.extensions?.details as ErrorDetail[] | undefined;
    return new AppError(kind, (ERRORS[kind] as ErrorRow).masked ? MASKED_MESSAGE : error.message, details);
  }

  /** `requestId` lets support find the logs; a replay names the original request. */
  toBody(requestId?: string) {
    requestId = this.replayOf?.requestId ?? requestId;
    return {
      error: {
        code: this.kind,
        message: this.message,
        ...(this.details?.length ? { details: this.details } : {}),
        ...(requestId ? { requestId } : {}),
      },
    };
  }
}

export const badInput = (message: string, details?: ErrorDetail[]) => new AppError('invalid_request', message, details);
