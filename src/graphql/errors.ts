import { GraphQLError } from 'graphql';

/** The `extensions.code` values of contract section 5. */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'BAD_USER_INPUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INSUFFICIENT_CREDITS'
  | 'FEATURE_UNAVAILABLE'
  | 'RATE_LIMITED'
  | 'TIMEOUT'
  | 'INTERNAL';

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * An expected failure, safe to show to the caller. Anything else thrown by a resolver is masked
 * as INTERNAL and logged.
 */
export class AppError extends GraphQLError {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(message, { extensions: details ? { code, details } : { code } });
    this.code = code;
    this.details = details;
  }
}

export const badInput = (message: string, details?: ErrorDetail[]) => new AppError('BAD_USER_INPUT', message, details);
