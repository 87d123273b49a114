import { builder } from '../schema/builder.js';
import { pageArgs, pageRef } from '../schema/listing.js';
import { Organization } from './organization.entity.js';
import { User } from './user.entity.js';
import { USER_ROLES } from '../schema/principal.js';
import { createOrganization, createUser, findOrganization, listOrganizations, listUsers, setUserRole } from './organizations.service.js';

export const UserRoleEnum = builder.enumType('UserRole', { values: USER_ROLES });

export const OrganizationRef = builder.objectType(Organization, {
  name: 'Organization',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    skipTraceEnabled: t.exposeBoolean('skipTraceEnabled'),
    skipTraceCredits: t.exposeInt('skipTraceCredits'),
  }),
});

export const UserRef = builder.objectType(User, {
  name: 'User',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.id({ resolve: (user) => user.organization.id }),
    email: t.exposeString('email'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({ type: UserRoleEnum, resolve: (user) => user.role }),
  }),
});

const OrganizationPageRef = pageRef('OrganizationPage', OrganizationRef);
const UserPageRef = pageRef('UserPage', UserRef);

builder.queryFields((t) => ({
  organization: t.field({
    type: OrganizationRef,
    nullable: true,
    description: 'An organization by id: platform, or an ADMIN-scoped key of an ADMIN of that organization.',
    args: { id: t.arg.id({ required: true }) },
    authScopes: (_parent, args) => ({ platform: true, organizationAdmin: String(args.id) }),
    resolve: (_parent, args, ctx) => findOrganization(ctx.db.em, String(args.id)),
  }),
  organizations: t.field({
    type: OrganizationPageRef,
    description: 'Every organization, newest first, keyset-paginated: platform only.',
    args: { first: t.arg.int(pageArgs.first), after: t.arg.string(pageArgs.after) },
    authScopes: { platform: true },
    resolve: (_parent, args, ctx) => listOrganizations(ctx.db.em, args),
  }),
  users: t.field({
    type: UserPageRef,
    description:
      'The users of an organization, newest first, keyset-paginated: platform, or an ADMIN-scoped key of an ADMIN of that organization.',
    args: {
      organizationId: t.arg.id({ required: true }),
      first: t.arg.int(pageArgs.first),
      after: t.arg.string(pageArgs.after),
    },
    authScopes: (_parent, args) => ({ platform: true, organizationAdmin: String(args.organizationId) }),
    resolve: (_parent, args, ctx) => listUsers(ctx.db.em, String(args.organizationId), args),
  }),
}));

builder.mutationFields((t) => ({
  createOrganization: t.field({
    type: OrganizationRef,
    authScopes: { platform: true },
    args: {
      name: t.arg.string({ required: true }),
      skipTraceEnabled: t.arg.boolean({ required: true, defaultValue: true }),
    },
    resolve: (_parent, args, ctx) => createOrganization(ctx.db.em, args),
  }),
  createUser: t.field({
    type: UserRef,
    authScopes: { platform: true },
    args: {
      organizationId: t.arg.id({ required: true }),
      email: t.arg.string({ required: true }),
      name: t.arg.string(),
      role: t.arg({ type: UserRoleEnum, required: true, defaultValue: 'MEMBER' }),
    },
    resolve: (_parent, args, ctx) => createUser(ctx.db.em, { ...args, organizationId: String(args.organizationId) }),
  }),
  setUserRole: t.field({
    type: UserRef,
    description:
      "Lowering a role to MEMBER voids that user's ADMIN scope at once and removes ADMIN from the user's existing keys for good (a key whose only scope was ADMIN is revoked): raised to ADMIN again, the user needs a newly issued key for ADMIN.",
    authScopes: { platform: true },
    args: {
      userId: t.arg.id({ required: true }),
      role: t.arg({ type: UserRoleEnum, required: true }),
    },
    resolve: (_parent, args, ctx) => ctx.services.principals.changing(() => setUserRole(ctx.db.em, String(args.userId), args.role)),
  }),
}));
