import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Em } from '../infra/database/orm.js';
import { isUuid } from '../common/uuid.js';
import { AppError, badInput } from '../common/errors.js';
import { decodeKeysetCursor, encodeKeysetCursor, type KeysetPosition } from '../common/keyset-cursor.js';
import { withdrawAdminScope } from '../auth/api-keys.data.js';
import type { Organization } from './organization.entity.js';
import type { User } from './user.entity.js';
import type { UserRole } from '../graphql/principal.js';
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

export const LISTING_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  nodes: T[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/**
 * One page of a listing newest first: checks `first`, reads the cursor `after` (bound to `list`,
 * so a cursor of another listing is refused), and asks `select` for one row more than the page to
 * tell whether another follows. Rows inserted meanwhile sort before the cursor, so walking every
 * page returns each row that existed at the first call exactly once.
 */
async function listingPage<T extends KeysetPosition>(
  list: string,
  args: PageArgs,
  select: (after: KeysetPosition | null, limit: number) => Promise<T[]>,
): Promise<Page<T>> {
  const first = args.first ?? LISTING_PAGE_SIZE.default;
  if (!Number.isInteger(first) || first < LISTING_PAGE_SIZE.min || first > LISTING_PAGE_SIZE.max) {
    throw badInput(`first must be an integer from ${LISTING_PAGE_SIZE.min} to ${LISTING_PAGE_SIZE.max}.`, [
      { path: 'first', message: `must be between ${LISTING_PAGE_SIZE.min} and ${LISTING_PAGE_SIZE.max}` },
    ]);
  }
  let after: KeysetPosition | null = null;
  if (args.after) {
    after = decodeKeysetCursor(list, args.after);
    if (!after)
      throw badInput('after is malformed or belongs to another listing.', [{ path: 'after', message: 'is not a cursor of this listing' }]);
  }
  const rows = await select(after, first + 1);
  const nodes = rows.slice(0, first);
  const last = nodes[nodes.length - 1];
  return { nodes, nextCursor: rows.length > first && last ? encodeKeysetCursor(list, last) : null };
}

/** Every organization, newest first. */
export function listOrganizations(em: Em, args: PageArgs): Promise<Page<Organization>> {
  return listingPage('organizations', args, (after, limit) => selectOrganizations(em, after, limit));
}

/** The users of an organization, newest first; NOT_FOUND for an unknown organization. */
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

/** The earliest user with this email, in any organization, or null (the embedded demo seed finds its user so). */
export function findFirstUserByEmail(em: Em, email: string): Promise<User | null> {
  return selectFirstUserByEmail(em, email);
}

/** The organization of a user, or null for an unknown or malformed id. */
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

/**
 * Lowering a role to MEMBER voids the user's ADMIN scope at once (scopes are re-derived from the
 * role on every request) and, in the same transaction, removes ADMIN from the user's keys for
 * good: raised again, the user needs a newly issued key for ADMIN.
 */
export async function setUserRole(em: Em, userId: string, role: UserRole): Promise<User> {
  return em.transactional(async (tx) => {
    const user = await getUser(tx, userId);
    await updateUserRole(tx, user, role);
    if (role !== 'ADMIN') await withdrawAdminScope(tx, user.id);
    return user;
  });
}
