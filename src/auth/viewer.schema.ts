import { AppError } from '../common/errors.js';
import { builder } from '../schema/builder.js';
import type { Principal, Scope } from '../schema/principal.js';
import { ScopeEnum } from './auth.schema.js';

export interface Viewer {
  principal: 'user' | 'organization' | 'platform';
  organizationId: string | null;
  userId: string | null;
  keyId: string | null;
  keyHint: string | null;
  scopes: Scope[];
}

export function viewerOf(principal: Exclude<Principal, { type: 'anonymous' }>): Viewer {
  switch (principal.type) {
    case 'user':
      return {
        principal: 'user',
        organizationId: principal.organizationId,
        userId: principal.userId,
        keyId: principal.keyId,
        keyHint: principal.keyHint,
        scopes: [...principal.scopes].sort(),
      };
    case 'organization':
      return {
        principal: 'organization',
        organizationId: principal.organizationId,
        userId: null,
        keyId: principal.keyId,
        keyHint: principal.keyHint,
        scopes: [],
      };
    case 'platform':
      // The platform token is configuration, not an issued key: it has no id, and no part of it is shown.
      return { principal: 'platform', organizationId: null, userId: null, keyId: null, keyHint: null, scopes: [] };
  }
}

const ViewerPrincipalEnum = builder.enumType('ViewerPrincipal', {
  description: 'The kind of credential: a gateway key (`user`), a skip trace key (`organization`) or the platform token (`platform`).',
  values: ['user', 'organization', 'platform'] as const,
});

const ViewerRef = builder.objectRef<Viewer>('Viewer').implement({
  description: 'The caller, as its credential identifies it. Never carries a secret: a key is shown by its id and hint.',
  fields: (t) => ({
    principal: t.field({ type: ViewerPrincipalEnum, resolve: (viewer) => viewer.principal }),
    organizationId: t.exposeID('organizationId', {
      nullable: true,
      description: "The key's organization (a gateway key's owner's, or the skip trace key's); null for the platform.",
    }),
    userId: t.exposeID('userId', { nullable: true, description: "A gateway key's owner; null for other credentials." }),
    keyId: t.exposeID('keyId', { nullable: true, description: "The key's id (as `apiKeys` lists it); null for the platform token." }),
    keyHint: t.exposeString('keyHint', {
      nullable: true,
      description: "The key's first 8 and last 4 characters, as listed after issue; null for the platform token.",
    }),
    scopes: t.field({
      type: [ScopeEnum],
      description: "A gateway key's scopes as they grant now (ADMIN drops out once the owner is no longer an ADMIN); empty for others.",
      resolve: (viewer) => viewer.scopes,
    }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    description:
      'Who is calling: the principal, its organization and user ids, and the key by id and hint, so the holder of a key (the demo keys included) can find its ids. Any credential.',
    // READ is for the gateway operation, which must name exactly one scope.
    authScopes: { anyCredential: true, READ: true },
    resolve: (_parent, _args, ctx) => {
      // authScopes admit no anonymous caller; this narrows the type.
      if (ctx.principal.type === 'anonymous') throw new AppError('invalid_key', 'A valid credential is required.');
      return viewerOf(ctx.principal);
    },
  }),
);
