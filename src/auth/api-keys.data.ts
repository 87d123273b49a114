import type { Em } from '../infra/database/orm.js';
import type { Sql } from '../infra/database/sql.js';
import type { Scope, UserRole } from '../schema/principal.js';
import { pgTextArray } from '../common/pg-array.js';
import { ApiKey } from './api-key.entity.js';
import { toDate } from '../common/to-date.js';
import type { KeysetPosition } from '../common/keyset-cursor.js';

/**
 * Every read and write of `api_keys`. Other domains ask through these functions (or the
 * service's), never with SQL of their own.
 */

/** An active gateway key with what the request needs of its owner. */
export interface GatewayKeyOwner {
  id: string;
  keyHash: string;
  scopes: Scope[];
  userId: string;
  organizationId: string;
  role: UserRole;
}

interface GatewayKeyRow {
  id: string;
  key_hash: string;
  scopes: Scope[] | string;
  user_id: string;
  organization_id: string;
  role: UserRole;
}

/** PostgreSQL's text[] arrives parsed from `pg`, and as its literal form from some drivers. */
function parseScopes(value: Scope[] | string): Scope[] {
  if (Array.isArray(value)) return value;
  return value
    .replace(/^\{|\}$/g, '')
    .split(',')
    .filter(Boolean) as Scope[];
}

/**
 * The active key with this hash, with its owner's role and organization, in one indexed query.
 * The one read of `users` outside the organizations domain: this lookup runs on every gateway
 * request, and asking the organizations domain for the owner would add a second round trip to
 * each of them. It reads only `users.id`, `organization_id` and `role`.
 */
export async function findActiveGatewayKey(sql: Sql, keyHash: string): Promise<GatewayKeyOwner | null> {
  const rows = await sql.execute<GatewayKeyRow[]>(
    `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
       from api_keys k join users u on u.id = k.user_id
      where k.key_hash = ? and k.revoked_at is null`,
    [keyHash],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    keyHash: row.key_hash,
    scopes: parseScopes(row.scopes),
    userId: row.user_id,
    organizationId: row.organization_id,
    role: row.role,
  };
}

/**
 * The same lookup as a CTE body for a statement of another domain's to start with
 * (`with k as (${GATEWAY_KEY_OWNER}) …`): its one `?` is the key hash, and its columns are
 * prefixed `key_` so they never clash with the rest of the statement's; join the owner by
 * `k.key_user_id`. Such a statement returns no row of `k` for a key that is unknown or revoked
 * (`gatewayKeyOwnerOf` reads it), so it folds the key lookup into the operation's own statement:
 * one round trip for both (see `auth/key-preload.ts`).
 */
export const GATEWAY_KEY_OWNER = `select k.id as key_id, k.key_hash, k.scopes as key_scopes, u.id as key_user_id,
         u.organization_id as key_organization_id, u.role as key_role
    from api_keys k join users u on u.id = k.user_id
   where k.key_hash = ? and k.revoked_at is null`;

/** A row of a statement that selected `k.*` from `GATEWAY_KEY_OWNER` (`k`), as the key's owner. */
export interface GatewayKeyOwnerColumns {
  key_id: string;
  key_hash: string;
  key_scopes: Scope[] | string;
  key_user_id: string;
  key_organization_id: string;
  key_role: UserRole;
}

/** The key's owner from such a row; null without one (the key is unknown or revoked). */
export function gatewayKeyOwnerOf(row: GatewayKeyOwnerColumns | undefined): GatewayKeyOwner | null {
  if (!row) return null;
  return {
    id: row.key_id,
    keyHash: row.key_hash,
    scopes: parseScopes(row.key_scopes),
    userId: row.key_user_id,
    organizationId: row.key_organization_id,
    role: row.key_role,
  };
}

/** The keys among `ids` that are not revoked (one query for any number of keys: open streams re-check theirs). */
export async function activeKeyIds(sql: Sql, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await sql.execute<{ id: string }[]>(`select id from api_keys where id = any(?::uuid[]) and revoked_at is null`, [
    pgTextArray(ids),
  ]);
  return new Set(rows.map((row) => row.id));
}

/** A key as listed: what finds it (its hint) and its state, never its secret or hash. */
export interface ApiKeyView {
  id: string;
  hint: string;
  scopes: Scope[];
  createdAt: Date;
  createdBy: string | null;
  revokedAt: Date | null;
}

interface ApiKeyViewRow {
  id: string;
  hint: string;
  scopes: Scope[] | string;
  created_at: Date | string;
  created_by: string | null;
  revoked_at: Date | string | null;
}

/**
 * A user's keys, revoked ones included, newest first after `after`, at most `limit`: a keyset walk
 * of `api_keys_listing_idx`.
 */
export async function selectApiKeysOfUser(sql: Sql, userId: string, after: KeysetPosition | null, limit: number): Promise<ApiKeyView[]> {
  const rows = await sql.execute<ApiKeyViewRow[]>(
    `select id, hint, scopes, created_at, created_by, revoked_at from api_keys
      where user_id = ?${after ? ' and (created_at, id) < (?::timestamptz, ?::uuid)' : ''}
      order by created_at desc, id desc limit ?`,
    after ? [userId, after.createdAt, after.id, limit] : [userId, limit],
  );
  return rows.map((row) => ({
    id: row.id,
    hint: row.hint,
    scopes: parseScopes(row.scopes),
    createdAt: toDate(row.created_at),
    createdBy: row.created_by,
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
  }));
}

/** The hints of a user's active keys (at most the per-user limit of them, but for keys issued before it). */
export async function selectActiveApiKeyHints(sql: Sql, userId: string): Promise<string[]> {
  const rows = await sql.execute<{ hint: string }[]>(
    `select hint from api_keys where user_id = ? and revoked_at is null order by created_at desc, id desc`,
    [userId],
  );
  return rows.map((row) => row.hint);
}

/** How many active keys a user holds (`tx`: the issuing transaction, which holds the user's row lock). */
export async function countActiveApiKeys(tx: Em, userId: string): Promise<number> {
  const [row] = await tx.execute<{ count: number }[]>(
    `select count(*)::int as count from api_keys where user_id = ? and revoked_at is null`,
    [userId],
  );
  return Number(row?.count ?? 0);
}

export async function insertApiKey(
  tx: Em,
  input: { userId: string; keyHash: string; hint: string; scopes: Scope[]; createdBy: string },
): Promise<ApiKey> {
  const key = tx.create(ApiKey, {
    user: input.userId,
    keyHash: input.keyHash,
    hint: input.hint,
    scopes: input.scopes,
    createdBy: input.createdBy,
    revokedAt: null,
  });
  await tx.flush();
  return key;
}

/** `id` is a well-formed uuid (the caller checks: a malformed one would be a database error). */
export async function findApiKeyById(em: Em, id: string): Promise<ApiKey | null> {
  return em.findOne(ApiKey, { id });
}

export async function markApiKeyRevoked(em: Em, key: ApiKey): Promise<void> {
  key.revokedAt = new Date();
  await em.flush();
}

/**
 * Removes ADMIN from every key of a user lowered to MEMBER, inside the role change's transaction:
 * raised again, the user needs a newly issued key for ADMIN. A key whose only scope was ADMIN
 * would grant nothing, so it is revoked.
 */
export async function withdrawAdminScope(tx: Em, userId: string): Promise<void> {
  await tx.execute(
    `update api_keys set scopes = array_remove(scopes, 'ADMIN'),
            revoked_at = case when scopes = array['ADMIN'] then coalesce(revoked_at, now()) else revoked_at end
      where user_id = ? and 'ADMIN' = any(scopes)`,
    [userId],
    'run',
  );
}
