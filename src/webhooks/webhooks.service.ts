import { randomBytes } from 'node:crypto';
import { AppError } from '../common/errors.js';
import type { Db } from '../infra/database/sql.js';
import { hasWebhookSecret, storeWebhookSecret } from './webhooks.data.js';

/** Standard Webhooks asks for 24 to 64. */
const SECRET_BYTES = 32;

/** The only time the secret is shown. */
export interface IssuedWebhookSecret {
  secret: string;
  createdAt: Date;
}

export async function rotateWebhookSecret(db: Db, organizationId: string): Promise<IssuedWebhookSecret> {
  const secret = `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;
  return { secret, createdAt: await storeWebhookSecret(db, organizationId, secret) };
}

/** Refused up front: a webhook could not be signed. */
export async function ensureWebhookSecret(db: Db, organizationId: string): Promise<void> {
  if (!(await hasWebhookSecret(db, organizationId)))
    throw new AppError(
      'invalid_request',
      'The organization has no webhook secret: issue one with POST /api/v1/skiptrace/webhook-secret (rotateSkipTraceWebhookSecret) before asking for webhooks.',
      [{ path: 'webhookUrl', message: 'The organization has no webhook secret.' }],
    );
}
