import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import { AppError, badInput } from '../common/errors.js';
import { listingPage, type Page, type PageArgs } from '../common/keyset-page.js';
import { withdrawAdminScope } from '../auth/api-keys.data.js';
import type { Organization } from './organization.entity.js';
import type { User } from './user.entity.js';
import type { UserRole } from '../schema/principal.js';
import {
  findOrganizationById,
  findUserById,
  insertOrganization,
  insertUser,
  selectFirstUserByEmail,
  selectOrganizations,
  selectUsers,
  updateUserRole,
} from './organizations.data.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function listOrganizations(em: Em, args: PageArgs): Promise<Page<Organization>> {
  return listingPage('organizations', args, (after, limit) => selectOrganizations(em, after, limit));
}

export async function listUsers(em: Em, organizationId: string, args: PageArgs): Promise<Page<User>> {
  const organization = await getOrganization(em, organizationId);
  return listingPage(`users:${organization.id}`, args, (after, limit) => selectUsers(em, organization.id, after, limit));
}

export async function findOrganization(em: Em, id: string): Promise<Organization | null> {
  return isUuid(id) ? findOrganizationById(em, id) : null;
}

export async function getOrganization(em: Em, id: string): Promise<Organization> {
  const organization = await findOrganization(em, id);
  if (!organization) throw new AppError('not_found', 'No such organization.');
  return organization;
}

export async function getUser(em: Em, id: string): Promise<User> {
  const user = isUuid(id) ? await findUserById(em, id) : null;
  if (!user) throw new AppError('not_found', 'No such user.');
  return user;
}

/** The embedded demo seed finds its user so. */
export function findFirstUserByEmail(em: Em, email: string): Promise<User | null> {
  return selectFirstUserByEmail(em, email);
}

export async function organizationOfUser(em: Em, userId: string): Promise<string | null> {
  const user = isUuid(userId) ? await findUserById(em, userId) : null;
  return user ? user.organization.id : null;
}

export async function createOrganization(em: Em, input: { name: string; skipTraceEnabled: boolean }): Promise<Organization> {
  const name = input.name.trim();
  if (!name || name.length > 200)
    throw badInput('name must be 1 to 200 characters.', [{ path: 'name', message: 'must be 1 to 200 characters' }]);
  return insertOrganization(em, { name, skipTraceEnabled: input.skipTraceEnabled });
}

export async function createUser(
  em: Em,
  input: { organizationId: string; email: string; name?: string | null; role: UserRole },
): Promise<User> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email) || email.length > 320)
    throw badInput('email is not a valid address.', [{ path: 'email', message: 'must be an email address' }]);
  const organization = await getOrganization(em, input.organizationId);
  try {
    return await insertUser(em, { organization, email, name: input.name?.trim() || null, role: input.role });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      throw new AppError('conflict', 'A user with this email already exists in the organization.');
    throw error;
  }
}

/** Scopes are derived from the role at each key lookup (and the resolver has every instance look again), so ADMIN goes at once; it is also removed from the keys for good. */
export async function setUserRole(em: Em, userId: string, role: UserRole): Promise<User> {
  return em.transactional(async (tx) => {
    const user = await getUser(tx, userId);
    await updateUserRole(tx, user, role);
    if (role !== 'ADMIN') await withdrawAdminScope(tx, user.id);
    return user;
  });
}
