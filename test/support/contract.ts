/**
 * The REST error codes of the README's error table, written out independently of the implementation, as the tests' oracle:
 * every REST error code and its HTTP status.
 */
export const REST_STATUS: Record<string, number> = {
  invalid_key: 401,
  insufficient_scope: 403,
  feature_unavailable: 403,
  insufficient_credits: 402,
  unknown_operation: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_key_in_use: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_request: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  concurrency_limit: 429,
  timeout: 504,
  internal_error: 500,
};

/** The GraphQL `extensions.code` values the README lists, likewise written out independently. */
export const GRAPHQL_CODES: readonly string[] = [
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
];
