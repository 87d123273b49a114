import { defineEntity, p } from '@mikro-orm/core';
import { Organization } from './organization.entity.js';

import { USER_ROLES } from '../schema/principal.js';

export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => crypto.randomUUID()),
    organization: () => p.manyToOne(Organization).ref(),
    email: p.text(),
    name: p.text().nullable(),
    role: p.enum(USER_ROLES).default('MEMBER'),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
});

export class User extends UserSchema.class {}
UserSchema.setClass(User);
