import type { Em } from '../infra/database/orm.js';
import { empty, raw, inUnitOfWork, sql } from '../infra/database/sql.js';
import type { UserRole } from '../schema/principal.js';
import { pgTextArray } from '../common/pg-array.js';
import type { KeysetPosition } from '../common/keyset-page.js';
import { Organization } from './organization.entity.js';
import { User } from './user.entity.js';

/**
 * The skip trace columns of `organizations` belong to billing; here only creation sets them. Callers
 * pass well-formed uuids: a malformed one would be a database error.
 */

/** `limit` is a checked integer, written into the text for the planner. */
const keysetPageClause = (after: KeysetPosition | null, limit: number, where: 'where' | 'and') =>
  sql`${after ? sql`${raw(where)} (created_at, id) < (${after.createdAt}, ${after.id})` : empty} order by created_at desc, id desc limit ${raw(String(limit))}`;

export async function findOrganizationById(em: Em, id: string): Promise<Organization | null> {
  return em.findOne(Organization, { id });
}

export async function findUserById(em: Em, id: string): Promise<User | null> {
  return em.findOne(User, { id });
}

export async function selectFirstUserByEmail(em: Em, email: string): Promise<User | null> {
  return em.findOne(User, { email }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** A keyset walk of `organizations_listing_idx`, so a page never sorts the table. */
export async function selectOrganizations(em: Em, after: KeysetPosition | null, limit: number): Promise<Organization[]> {
  const rows = await inUnitOfWork<Record<string, unknown>[]>(
    em,
    sql`select * from organizations ${keysetPageClause(after, limit, 'where')}`,
  );
  return rows.map((row) => em.map(Organization, row));
}

/** A keyset walk of `users_listing_idx`. */
export async function selectUsers(em: Em, organizationId: string, after: KeysetPosition | null, limit: number): Promise<User[]> {
  const rows = await inUnitOfWork<Record<string, unknown>[]>(
    em,
    sql`select * from users where organization_id = ${organizationId} ${keysetPageClause(after, limit, 'and')}`,
  );
  return rows.map((row) => em.map(User, row));
}

export async function insertOrganization(em: Em, input: { name: string; skipTraceEnabled: boolean }): Promise<Organization> {
  const organization = em.create(Organization, input);
  await em.flush();
  return organization;
}

/** A duplicate email in the organization throws UniqueConstraintViolationException. */
export async function insertUser(
  em: Em,
  input: { organization: Organization; email: string; name: string | null; role: UserRole },
): Promise<User> {
  const user = em.create(User, input);
  await em.flush();
  return user;
}

export async function updateUserRole(tx: Em, user: User, role: UserRole): Promise<void> {
  user.role = role;
  await tx.flush();
}

/**
 * Held until `tx` ends, so a concurrent role change or key issue either committed first or waits.
 * FOR NO KEY UPDATE, so rows that merely reference the user (FOR KEY SHARE) are never held up.
 */
export async function lockUserRow(tx: Em, userId: string): Promise<UserRole | null> {
  const [row] = await inUnitOfWork<{ role: UserRole }[]>(tx, sql`select role from users where id = ${userId} for no key update`);
  return row?.role ?? null;
}

/** Lower-cased as stored. */
export async function existingUserIds(em: Em, ids: readonly string[]): Promise<Set<string>> {
  const rows = await inUnitOfWork<{ id: string }[]>(em, sql`select id from users where id = any(${pgTextArray(ids)}::uuid[])`);
  return new Set(rows.map((row) => row.id));
}
