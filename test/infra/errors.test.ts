import { GraphQLError, locatedError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { AppError, ERRORS, GRAPHQL_ERROR_CODES, MASKED_MESSAGE, type ErrorKind } from '../../src/common/errors.js';
import { REST_STATUS } from '../support/contract.js';

describe('the error table', () => {
  it("gives every REST code of the contract the contract's status", () => {
    for (const [code, status] of Object.entries(REST_STATUS)) expect([code, ERRORS[code as ErrorKind]?.status]).toEqual([code, status]);
  });

  it('maps every GraphQL code back to one REST code, so an error from graphql-js or Pothos has an HTTP answer', () => {
    for (const code of GRAPHQL_ERROR_CODES) {
      const error = AppError.from(new GraphQLError('x', { extensions: { code } }));
      expect(ERRORS[error.kind].graphql).toBe(code);
    }
    expect(AppError.from(new GraphQLError('x', { extensions: { code: 'FORBIDDEN' } })).kind).toBe('insufficient_scope');
    expect(AppError.from(new GraphQLError('x', { extensions: { code: 'BAD_USER_INPUT' } })).kind).toBe('invalid_request');
  });

  it('keeps the kind of an AppError that went through GraphQL execution', () => {
    const refused = new AppError('concurrency_limit', 'busy');
    expect(refused.extensions.code).toBe('RATE_LIMITED');
    expect(AppError.from(locatedError(refused, [], ['skipTrace'])).kind).toBe('concurrency_limit');
    expect(refused.headers).toEqual({ 'Retry-After': 1 });
  });

  it('masks an error without a known code, and its message', () => {
    const masked = AppError.from(new GraphQLError('connection to 10.0.0.5 refused', { extensions: { code: 'ECONNREFUSED' } }));
    expect([masked.kind, masked.status, masked.message]).toEqual(['internal_error', 500, MASKED_MESSAGE]);
    expect(AppError.from(new GraphQLError('secret', { extensions: { code: 'INTERNAL' } })).message).toBe(MASKED_MESSAGE);
  });

  it('answers REST callers in the contract shape', () => {
    const error = new AppError('invalid_request', 'The skip trace request is invalid.', [{ path: 'address.zip', message: 'is required' }]);
    expect(error.toBody('req-1')).toEqual({
      error: {
        code: 'invalid_request',
        message: 'The skip trace request is invalid.',
        details: [{ path: 'address.zip', message: 'is required' }],
        requestId: 'req-1',
      },
    });
    expect(error.extensions).toEqual({ code: 'BAD_USER_INPUT', details: [{ path: 'address.zip', message: 'is required' }] });
  });
});
