import type { FastifyRequest } from 'fastify';
import { canonicalHash, type Json } from '../../common/canonical-hash.js';
import { AppError } from '../../common/errors.js';
import type { IdempotencyKey } from '../../schema/context.js';

/** 1 to 255 printable ASCII characters (space to tilde). */
const KEY = /^[\x20-\x7E]{1,255}$/;

/** The header as the API reference documents it. */
export const IDEMPOTENCY_KEY_HEADER = {
  description:
    'Optional. A retry with the same key and the same body within 24 hours replays the first answer (same status and body, `Idempotent-Replayed: true`) with no new charge; the same key with another body is 422 `idempotency_key_reused`, and while the first is in flight 409 `idempotency_key_in_use`.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
} as const;

/**
 * The request's idempotency key from `header` and its body's fingerprint, or undefined when the
 * header is absent. Bodies are compared after JSON parsing: the fingerprint hashes canonical JSON,
 * so key order and whitespace do not make two bodies differ. A malformed or repeated header is 422.
 */
export function readIdempotencyKey(request: FastifyRequest, header: string): IdempotencyKey | undefined {
  const values = request.raw.headersDistinct[header.toLowerCase()];
  if (!values) return undefined;
  if (values.length !== 1 || !KEY.test(values[0]))
    throw new AppError('invalid_request', `${header} must be sent once, as 1 to 255 printable ASCII characters.`, [
      { path: header, message: 'must be 1 to 255 printable ASCII characters, sent once' },
    ]);
  return { key: values[0], fingerprint: canonicalHash((request.body ?? null) as Json) };
}
