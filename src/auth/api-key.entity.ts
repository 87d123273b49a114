import { defineEntity, p } from '@mikro-orm/core';
import { User } from '../organizations/user.entity.js';

import type { Scope } from '../schema/principal.js';

/** Only the SHA-256 of the secret is stored. `createdBy` is null for keys issued before it was recorded. */
export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => crypto.randomUUID()),
    user: () => p.manyToOne(User).ref(),
    keyHash: p.text().unique(),
    hint: p.text(),
    scopes: p.array<Scope>(),
    createdBy: p.text().nullable(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    revokedAt: p.datetime(3).nullable(),
  },
});

export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);
