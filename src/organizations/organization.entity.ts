import { defineEntity, p } from '@mikro-orm/core';

export const OrganizationSchema = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => crypto.randomUUID()),
    name: p.text(),
    skipTraceEnabled: p.boolean().default(true),
    /** Written only by the credit ledger, through a conditional update (never below zero). */
    skipTraceCredits: p.integer().default(0),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
});

export class Organization extends OrganizationSchema.class {}
OrganizationSchema.setClass(Organization);
