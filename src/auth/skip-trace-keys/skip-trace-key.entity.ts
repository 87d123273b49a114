import { defineEntity, p } from '@mikro-orm/core';

/** Only the SHA-256 of the secret is stored. A partial unique index allows one active key per organization. */
export const SkipTraceKeySchema = defineEntity({
  name: 'SkipTraceKey',
  tableName: 'skip_trace_keys',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => crypto.randomUUID()),
    organizationId: p.uuid(),
    keyHash: p.text().unique(),
    hint: p.text(),
    createdBy: p.text().nullable(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    revokedAt: p.datetime(3).nullable(),
  },
});

export class SkipTraceKey extends SkipTraceKeySchema.class {}
SkipTraceKeySchema.setClass(SkipTraceKey);
