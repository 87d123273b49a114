import type { ErrorCode, ErrorDetail } from '../../graphql/errors.js';

/** The REST error codes of contract section 2. */
export type RestErrorCode =
  | 'invalid_key'
  | 'insufficient_scope'
  | 'feature_unavailable'
  | 'insufficient_credits'
  | 'unknown_operation'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_request'
  | 'rate_limited'
  | 'concurrency_limit'
  | 'timeout'
  | 'conflict'
  | 'internal_error';

const STATUS: Record<RestErrorCode, number> = {
  invalid_key: 401,
  insufficient_credits: 402,
  insufficient_scope: 403,
  feature_unavailable: 403,
  unknown_operation: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_request: 422,
  rate_limited: 429,
  concurrency_limit: 429,
  internal_error: 500,
  timeout: 504,
};

/** GraphQL `extensions.code` → REST error code: the one place the two vocabularies meet. */
const FROM_GRAPHQL: Record<ErrorCode, RestErrorCode> = {
  UNAUTHENTICATED: 'invalid_key',
  FORBIDDEN: 'insufficient_scope',
  BAD_USER_INPUT: 'invalid_request',
  NOT_FOUND: 'not_found',
  CONFLICT: 'conflict',
  INSUFFICIENT_CREDITS: 'insufficient_credits',
  FEATURE_UNAVAILABLE: 'feature_unavailable',
  RATE_LIMITED: 'rate_limited',
  TIMEOUT: 'timeout',
  INTERNAL: 'internal_error',
};

export const restErrorCode = (code: ErrorCode): RestErrorCode => FROM_GRAPHQL[code] ?? 'internal_error';

/** An error answered by a REST route as `{"error": {code, message, details?}}`. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: RestErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers: Record<string, string | number> = {},
  ) {
    super(message);
    this.status = STATUS[code];
  }

  static fromGraphQL(error: { message: string; extensions?: Record<string, unknown> }): ApiError {
    const code = restErrorCode(error.extensions?.code as ErrorCode);
    const message = code === 'internal_error' ? 'Unexpected error; retry.' : error.message;
    return new ApiError(code, message, error.extensions?.details as ErrorDetail[] | undefined);
  }

  /** The contract's error body; `requestId` (also in X-Request-Id) lets support find the logs. */
  toBody(requestId?: string) {
    return { error: { code: this.code, message: this.message, ...(this.details?.length ? { details: this.details } : {}), ...(requestId ? { requestId } : {}) } };
  }
}
