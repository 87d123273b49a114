import SchemaBuilder from '@pothos/core';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type { Context, OrganizationContext, PlatformContext, UserContext } from './context.js';
import { AppError } from '../common/errors.js';
import type { DbTimestamp } from '../common/to-date.js';

/**
 * The one SchemaBuilder. Scopes: READ/WRITE/ADMIN (gateway key; ADMIN only while its owner is),
 * platform, organizationAdmin, ownUserAdmin, ownUser (a key's own user), skipTrace, anyCredential.
 */
export const builder = new SchemaBuilder<{
  Context: Context;
  DefaultFieldNullability: false;
  // Output: a resolver may hand over a timestamp as PostgreSQL's text; the scalar writes it (common/to-date.ts).
  Scalars: { DateTime: { Input: Date; Output: DbTimestamp } };
  AuthScopes: {
    READ: boolean;
    WRITE: boolean;
    ADMIN: boolean;
    platform: boolean;
    organizationAdmin: string;
    ownUserAdmin: string;
    ownUser: string;
    skipTrace: boolean;
    anyCredential: boolean;
  };
  AuthContexts: {
    READ: UserContext;
    WRITE: UserContext;
    ADMIN: UserContext;
    platform: PlatformContext;
    organizationAdmin: UserContext;
    ownUserAdmin: UserContext;
    ownUser: UserContext;
    skipTrace: OrganizationContext;
    anyCredential: Context;
  };
}>({
  plugins: [ScopeAuthPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    // A subscription is refused when it opens, not at its first event.
    authorizeOnSubscribe: true,
    authScopes: ({ principal }) => {
      const userScope = (scope: 'READ' | 'WRITE' | 'ADMIN') => principal.type === 'user' && principal.scopes.has(scope);
      return {
        READ: userScope('READ'),
        WRITE: userScope('WRITE'),
        ADMIN: userScope('ADMIN'),
        platform: principal.type === 'platform',
        organizationAdmin: (organizationId) =>
          userScope('ADMIN') && principal.type === 'user' && principal.organizationId === organizationId.toLowerCase(),
        ownUserAdmin: (userId) => userScope('ADMIN') && principal.type === 'user' && principal.userId === userId.toLowerCase(),
        ownUser: (userId) => principal.type === 'user' && principal.userId === userId.toLowerCase(),
        skipTrace: principal.type === 'organization',
        anyCredential: principal.type !== 'anonymous',
      };
    },
    unauthorizedError: (_parent, context, info) =>
      context.principal.type === 'anonymous'
        ? new AppError('invalid_key', 'A valid credential is required.')
        : new AppError('insufficient_scope', `The credential may not use ${info.parentType.name}.${info.fieldName}.`),
  },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});

/** The builder's resolved type parameters, for helpers typed against it. */
export type BuilderTypes = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer Types> ? Types : never;
