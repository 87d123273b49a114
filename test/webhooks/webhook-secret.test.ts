/**
 * The organization's webhook signing secret: issued by `POST /api/v1/skiptrace/webhook-secret`
 * and `rotateSkipTraceWebhookSecret` (skip trace key), `whsec_` + base64 of 24 or more random
 * bytes, shown in that answer only, each call replacing it; `ensureWebhookSecret` refuses an
 * organization without one. Organizations' secrets are apart.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/common/errors.js';
import { printedSchema } from '../../src/app/schema.js';
import { ensureWebhookSecret } from '../../src/webhooks/index.js';
import { startService, type TestService } from '../support/harness.js';
import { organizationWithKey, rotateSecret } from '../support/webhooks.js';

let service: TestService;

beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
const post = (key: string | null, init: RequestInit = {}) =>
  service.request('/api/v1/skiptrace/webhook-secret', {
    method: 'POST',
    ...init,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(init.headers as Record<string, string>) },
  });
const storedSecret = async (organizationId: string) =>
  (await service.sql(`select secret from webhook_secrets where organization_id = ?`, [organizationId]))[0]?.secret as string | undefined;

describe('POST /api/v1/skiptrace/webhook-secret', () => {
  it('issues whsec_ + base64 of at least 24 random bytes, usable by standardwebhooks, and each call replaces it', async () => {
    const org = await organizationWithKey(service);
    const first = await post(org.key);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ secret: expect.stringMatching(SECRET), createdAt: expect.any(String) });
    expect(Buffer.from(SECRET.exec(first.body.secret)![1], 'base64').length).toBeGreaterThanOrEqual(24);
    expect(() => new Webhook(first.body.secret)).not.toThrow();
    expect(first.headers.get('x-ratelimit-remaining')).not.toBeNull();

    const second = await post(org.key, { headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(second.status).toBe(200);
    expect(second.body.secret).not.toBe(first.body.secret);
    expect(await storedSecret(org.organizationId)).toBe(second.body.secret);
  });

  it('takes no fields, and only the skip trace key', async () => {
    const org = await organizationWithKey(service);
    const withField = await post(org.key, { headers: { 'content-type': 'application/json' }, body: '{"secret":"whsec_mine"}' });
    expect(withField.status).toBe(422);
    expect(withField.body.error.code).toBe('invalid_request');
    expect((await post(null)).status).toBe(401);
    const user = await service.provision({ role: 'ADMIN', scopes: ['READ', 'WRITE', 'ADMIN'] });
    expect((await post(user.key)).body.error.code).toBe('invalid_key');
    expect(await storedSecret(org.organizationId)).toBeUndefined();
  });
});

describe('rotateSkipTraceWebhookSecret', () => {
  it('is the same mutation on /graphql, for the skip trace key only', async () => {
    const org = await organizationWithKey(service);
    const rotated = await service.graphql(`mutation { rotateSkipTraceWebhookSecret { secret createdAt } }`, {}, org.key);
    expect(rotated.body.data.rotateSkipTraceWebhookSecret.secret).toMatch(SECRET);
    expect(await storedSecret(org.organizationId)).toBe(rotated.body.data.rotateSkipTraceWebhookSecret.secret);
    const platform = await service.graphql(`mutation { rotateSkipTraceWebhookSecret { secret } }`);
    expect(platform.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('is the only field that ever returns the secret: shown once', () => {
    const mentions = printedSchema.split('\n').filter((line) => /\bWebhookSecret\b/.test(line));
    expect(mentions).toHaveLength(2);
    expect(mentions).toEqual(
      expect.arrayContaining(['type WebhookSecret {', expect.stringMatching(/^\s+rotateSkipTraceWebhookSecret: WebhookSecret!$/)]),
    );
  });
});

describe('ensureWebhookSecret', () => {
  it("refuses an organization without a secret with 422 invalid_request, and another organization's secret does not count", async () => {
    const first = await organizationWithKey(service);
    const second = await organizationWithKey(service);
    const db = service.app.services.sql;
    const refused = await ensureWebhookSecret(db, first.organizationId).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ kind: 'invalid_request', message: expect.stringMatching(/no webhook secret/) });

    const secret = await rotateSecret(service, first.key);
    await expect(ensureWebhookSecret(db, first.organizationId)).resolves.toBeUndefined();
    await expect(ensureWebhookSecret(db, second.organizationId)).rejects.toBeInstanceOf(AppError);
    // A second organization's rotation leaves the first's secret as it was.
    await rotateSecret(service, second.key);
    expect(await storedSecret(first.organizationId)).toBe(secret);
  });
});
