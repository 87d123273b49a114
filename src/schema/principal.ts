export const SCOPES = ['READ', 'WRITE', 'ADMIN'] as const;
export type Scope = (typeof SCOPES)[number];

export const USER_ROLES = ['ADMIN', 'MEMBER'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** Who is calling. Resolvers and the scope-auth function switch on `type`. */
export type Principal = AnonymousPrincipal | UserPrincipal | PlatformPrincipal | OrganizationPrincipal;

/** A principal that presented a valid credential: what rate windows and routes serve. */
export type Caller = Exclude<Principal, { type: 'anonymous' }>;

export const ANY_CALLER: readonly Caller['type'][] = ['user', 'organization', 'platform'];

export interface AnonymousPrincipal {
  type: 'anonymous';
}

/** A gateway key acting as its owner user. */
export interface UserPrincipal {
  type: 'user';
  keyId: string;
  /** The presented key's hint (first 8 and last 4 characters), as stored at issue. */
  keyHint: string;
  /** The presented key's hash (sha256, hex): what its rate window is keyed by. */
  keyHash: string;
  userId: string;
  organizationId: string;
  role: UserRole;
  /** Scopes as granted now: ADMIN is dropped when the owner's role is no longer ADMIN. */
  scopes: ReadonlySet<Scope>;
}

/** Internal tools holding INTERNAL_API_TOKEN. */
export interface PlatformPrincipal {
  type: 'platform';
}

/** A skip trace key: an organization-level secret. */
export interface OrganizationPrincipal {
  type: 'organization';
  keyId: string;
  keyHint: string;
  organizationId: string;
}

export const anonymous: AnonymousPrincipal = { type: 'anonymous' };

/** What a key records as its issuer (`created_by`): the platform, or the id of the key that issued it. */
export const PLATFORM_ISSUER = 'platform';

export function issuerOf(principal: Principal): string {
  if (principal.type === 'platform') return PLATFORM_ISSUER;
  if (principal.type === 'anonymous') throw new Error('An anonymous caller issues no key.');
  return principal.keyId;
}
