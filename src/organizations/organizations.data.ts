import type { Em } from '../infra/database/orm.js';
import type { UserRole } from '../schema/principal.js';
import { pgTextArray } from '../common/pg-array.js';
import type { KeysetPosition } from '../common/keyset-cursor.js';
import { Organization } from './organization.entity.js';
import { User } from './user.entity.js';

/**
 * Every read and write of `organizations` and `users`. Other domains ask through these functions
 * (or the service's), never with SQL of their own. The skip trace columns of `organizations`
 * (`skip_trace_enabled`, `skip_trace_credits`) are the skip trace domain's to read and change;
 * here the entity maps them and creation sets the first `skip_trace_enabled`. Ids passed in are
 * well-formed uuids (the caller checks: a malformed one would be a database error).
 */

export async function findOrganizationById(em: Em, id: string): Promise<Organization | null> {
  return em.findOne(Organization, { id });
}

export async function findUserById(em: Em, id: string): Promise<User | null> {
  return em.findOne(User, { id });
}

/** The earliest user with this email, in any organization. */
export async function selectFirstUserByEmail(em: Em, email: string): Promise<User | null> {
  return em.findOne(User, { email }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/**
 * Up to `limit` organizations after `after`, newest first: a keyset walk of
 * `organizations_listing_idx`, so a page never sorts the table.
 */
export async function selectOrganizations(em: Em, after: KeysetPosition | null, limit: number): Promise<Organization[]> {
  const rows = await em.execute(
    `select * from organizations${after ? ' where (created_at, id) < (?, ?)' : ''} order by created_at desc, id desc limit ?`,
    after ? [after.createdAt, after.id, limit] : [limit],
  );
  return rows.map((row) => em.map(Organization, row));
}

/** Up to `limit` users of an organization after `after`, newest first (`users_listing_idx`). */
export async function selectUsers(em: Em, organizationId: string, after: KeysetPosition | null, limit: number): Promise<User[]> {
  const rows = await em.execute(
    `select * from users where organization_id = ?${after ? ' and (created_at, id) < (?, ?)' : ''}
      order by created_at desc, id desc limit ?`,
    after ? [organizationId, after.createdAt, after.id, limit] : [organizationId, limit],
  );
  return rows.map((row) => em.map(User, row));
}

export async function insertOrganization(em: Em, input: { name: string; skipTraceEnabled: boolean }): Promise<Organization> {
  const organization = em.create(Organization, input);
  await em.flush();
  return organization;
}

/** Throws the ORM's UniqueConstraintViolationException for an email already used in the organization. */
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
 * A user's role, its row locked until the caller's transaction ends (`tx` is that transaction's
 * EntityManager), by one holder at a time: a concurrent role change, or another holder (e.g.
 * another issue of a key for this user), either committed before this read or waits for it.
 * FOR NO KEY UPDATE, so rows that merely reference the user (FOR KEY SHARE) are never held up.
 */
export async function lockUserRow(tx: Em, userId: string): Promise<UserRole | null> {
  const [row] = await tx.execute<{ role: UserRole }[]>(`select role from users where id = ? for no key update`, [userId]);
  return row?.role ?? null;
}

/** The ids among `ids` (well-formed uuids) that name a user, lower-cased as stored. */
export async function existingUserIds(em: Em, ids: readonly string[]): Promise<Set<string>> {
  const rows = await em.execute<{ id: string }[]>(`select id from users where id = any(?::uuid[])`, [pgTextArray(ids)]);
  return new Set(rows.map((row) => row.id));
}
