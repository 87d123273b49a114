import { defineEntity, p } from '@mikro-orm/core';

/**
 * A skip trace key (`stk_…`): acts for its organization on the skip trace routes. Only the SHA-256
 * of the secret is stored. At most one active (unrevoked) key per organization, enforced by a
 * partial unique index. `createdBy` is `platform` or the issuing gateway key's id; null for keys
 * issued before it was recorded.
 */
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
