import { builder } from '../graphql/builder.js';
import { SCOPES } from './api-key.entity.js';
import { createApiKey, organizationOfApiKey, revokeApiKey, type IssuedKey } from './api-keys.service.js';

export const ScopeEnum = builder.enumType('Scope', { values: SCOPES });

export const IssuedKeyRef = builder.objectRef<IssuedKey>('IssuedKey').implement({
  description: 'A newly issued key. `secret` is shown only here, once; afterwards only `hint` is.',
  fields: (t) => ({
    id: t.exposeID('id'),
    secret: t.exposeString('secret'),
    hint: t.exposeString('hint'),
    scopes: t.field({ type: [ScopeEnum], resolve: (key) => key.scopes }),
    createdAt: t.field({ type: 'DateTime', resolve: (key) => key.createdAt }),
  }),
});

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: IssuedKeyRef,
    description: 'Issues a gateway key (`gk_…`) acting as the user. ADMIN only for ADMIN users.',
    args: {
      userId: t.arg.id({ required: true }),
      scopes: t.arg({ type: [ScopeEnum], required: true }),
    },
    authScopes: async (_parent, args, ctx) => ({
      platform: true,
      organizationAdmin: (await ctx.db.loaders.user.load(String(args.userId)).catch(() => null))?.organization.id ?? '',
    }),
    resolve: (_parent, args, ctx) => createApiKey(ctx.db.em, String(args.userId), args.scopes),
  }),
  revokeApiKey: t.boolean({
    description: 'Revokes a gateway key; it is refused on every instance from the next request on.',
    args: { id: t.arg.id({ required: true }) },
    authScopes: async (_parent, args, ctx) => ({
      platform: true,
      organizationAdmin: (await organizationOfApiKey(ctx.db.em, String(args.id))) ?? '',
    }),
    resolve: (_parent, args, ctx) => revokeApiKey(ctx.db.em, String(args.id)),
  }),
}));
