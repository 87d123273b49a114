import { builder } from '../schema/builder.js';
import { pageArgs, pageRef } from '../schema/listing.js';
import { SCOPES } from '../schema/principal.js';
import { createApiKey, listApiKeys, organizationOfApiKey, revokeApiKey, type IssuedKey } from './api-keys.service.js';
import type { ApiKeyView } from './api-keys.data.js';
import { organizationOfUser } from '../organizations/organizations.service.js';
import { issuerOf } from '../schema/principal.js';

export const ScopeEnum = builder.enumType('Scope', { values: SCOPES });

export const CREATED_BY_DESCRIPTION =
  'Who issued the key: `platform`, or the id of the gateway key that issued it. Null for keys issued before issuers were recorded.';

export const IssuedKeyRef = builder.objectRef<IssuedKey>('IssuedKey').implement({
  description: 'A newly issued key. `secret` is shown only here, once; afterwards only `hint` is.',
  fields: (t) => ({
    id: t.exposeID('id'),
    secret: t.exposeString('secret'),
    hint: t.exposeString('hint'),
    scopes: t.field({ type: [ScopeEnum], resolve: (key) => key.scopes }),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
    createdBy: t.exposeString('createdBy', { description: CREATED_BY_DESCRIPTION }),
  }),
});

const ApiKeyRef = builder.objectRef<ApiKeyView>('ApiKey').implement({
  description: 'An issued gateway key as listed: found by its `hint`; its secret is never shown again.',
  fields: (t) => ({
    id: t.exposeID('id'),
    hint: t.exposeString('hint'),
    scopes: t.field({ type: [ScopeEnum], resolve: (key) => key.scopes }),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
    createdBy: t.exposeString('createdBy', { nullable: true, description: CREATED_BY_DESCRIPTION }),
    revokedAt: t.field({ type: 'DateTime', nullable: true, resolve: (key) => key.revokedAt }),
  }),
});

const ApiKeyPageRef = pageRef('ApiKeyPage', ApiKeyRef);

builder.queryField('apiKeys', (t) =>
  t.field({
    type: ApiKeyPageRef,
    description:
      "A user's gateway keys, newest first, revoked ones included, keyset-paginated, so a lost key can be found by its hint and revoked: platform, any key of that user itself, or an ADMIN-scoped key of an ADMIN of the user's organization.",
    args: { userId: t.arg.id({ required: true }), first: t.arg.int(pageArgs.first), after: t.arg.string(pageArgs.after) },
    authScopes: async (_parent, args, ctx) => ({
      platform: true,
      ownUser: String(args.userId),
      organizationAdmin: (await organizationOfUser(ctx.db.em, String(args.userId))) ?? '',
    }),
    resolve: (_parent, args, ctx) => listApiKeys(ctx.db.em, ctx.db.sql, String(args.userId), args),
  }),
);

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: IssuedKeyRef,
    description:
      'Issues a gateway key (`gk_…`) acting as the user: platform for any user; an ADMIN-scoped key for its own user only (another user is FORBIDDEN: no key acts as another user). ADMIN only for ADMIN users. A user holds at most MAX_KEYS_PER_USER (default 25) active keys; one more is BAD_USER_INPUT (revoke one first). The key records its issuer (`createdBy`).',
    args: {
      userId: t.arg.id({ required: true }),
      scopes: t.arg({ type: [ScopeEnum], required: true }),
    },
    authScopes: (_parent, args) => ({ platform: true, ownUserAdmin: String(args.userId) }),
    resolve: (_parent, args, ctx) =>
      createApiKey(ctx.db.em, {
        userId: String(args.userId),
        scopes: args.scopes,
        issuer: issuerOf(ctx.principal),
        maxActiveKeys: ctx.services.config.limits.maxKeysPerUser,
      }),
  }),
  revokeApiKey: t.boolean({
    description:
      'Revokes a gateway key; it is refused on every instance from the next request on. An ADMIN-scoped key may revoke any gateway key of its organization (a safety action, never acting as its owner).',
    args: { id: t.arg.id({ required: true }) },
    authScopes: async (_parent, args, ctx) => ({
      platform: true,
      organizationAdmin: (await organizationOfApiKey(ctx.db.em, String(args.id))) ?? '',
    }),
    resolve: (_parent, args, ctx) => ctx.services.principals.changing(() => revokeApiKey(ctx.db.em, String(args.id))),
  }),
}));
