import { builder } from '../schema/builder.js';
import { rotateWebhookSecret, type IssuedWebhookSecret } from './webhooks.service.js';

const WebhookSecretRef = builder.objectRef<IssuedWebhookSecret>('WebhookSecret').implement({
  description: "An organization's webhook signing secret, as issued: shown this once, never again.",
  fields: (t) => ({
    secret: t.exposeString('secret', {
      description:
        '`whsec_` + base64 of 32 random bytes: the key of the `webhook-signature` (Standard Webhooks, HMAC-SHA256), e.g. for `new Webhook(secret).verify(body, headers)` of the `standardwebhooks` library.',
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (issued) => issued.createdAt }),
  }),
});

builder.mutationFields((t) => ({
  rotateSkipTraceWebhookSecret: t.withAuth({ skipTrace: true }).field({
    type: WebhookSecretRef,
    description:
      "Issues the calling skip trace key's organization a new webhook signing secret, replacing the one it had (deliveries sign with the new one from their next attempt). The secret is shown only in this answer.",
    resolve: (_root, _args, ctx) => rotateWebhookSecret(ctx.db.sql, ctx.principal.organizationId),
  }),
}));
