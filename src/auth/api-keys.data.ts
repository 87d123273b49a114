import type { Em } from '../infra/database/orm.js';
import { empty, raw, sql, type Db } from '../infra/database/sql.js';
import type { Scope, UserRole } from '../schema/principal.js';
import { pgTextArray } from '../common/pg-array.js';
import { ApiKey } from './api-key.entity.js';
import { toDate } from '../common/to-date.js';
import type { KeysetPosition } from '../common/keyset-page.js';

/** Other domains reach `api_keys` only through these functions or the service's, never with SQL of their own. */

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
 * The one read of `users` outside the organizations domain: this runs on every gateway request, and
 * asking that domain would add a round trip to each. It reads only `id`, `organization_id` and `role`.
 */
export async function findActiveGatewayKey(db: Db, keyHash: string): Promise<GatewayKeyOwner | null> {
  const rows = await db.rows<GatewayKeyRow>(
    sql`select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
          from api_keys k join users u on u.id = k.user_id
         where k.key_hash = ${keyHash} and k.revoked_at is null`,
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

/** One query for any number of keys: open streams re-check theirs. */
export async function activeKeyIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.rows<{ id: string }>(
    sql`select id from api_keys where id = any(${pgTextArray(ids)}::uuid[]) and revoked_at is null`,
  );
  return new Set(rows.map((row) => row.id));
}

/** Never the secret or its hash. */
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

/** A keyset walk of `api_keys_listing_idx`. */
export async function selectApiKeysOfUser(db: Db, userId: string, after: KeysetPosition | null, limit: number): Promise<ApiKeyView[]> {
  const rows = await db.rows<ApiKeyViewRow>(
    sql`select id, hint, scopes, created_at, created_by, revoked_at from api_keys
         where user_id = ${userId}${after ? sql` and (created_at, id) < (${after.createdAt}::timestamptz, ${after.id}::uuid)` : empty}
         order by created_at desc, id desc limit ${raw(String(limit))}`,
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

export async function selectActiveApiKeyHints(db: Db, userId: string): Promise<string[]> {
  const rows = await db.rows<{ hint: string }>(
    sql`select hint from api_keys where user_id = ${userId} and revoked_at is null order by created_at desc, id desc`,
  );
  return rows.map((row) => row.hint);
}

/** `tx` must hold the user's row lock, so the count stays true until the insert. */
export async function countActiveApiKeys(tx: Em, userId: string): Promise<number> {
  const statement = sql`select count(*)::int as count from api_keys where user_id = ${userId} and revoked_at is null`;
  const [row] = await tx.execute<{ count: number }[]>(statement.sql, statement.values);
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

/** The caller checks `id` is a uuid: a malformed one would be a database error. */
export async function findApiKeyById(em: Em, id: string): Promise<ApiKey | null> {
  return em.findOne(ApiKey, { id });
}

export async function markApiKeyRevoked(em: Em, key: ApiKey): Promise<void> {
  key.revokedAt = new Date();
  await em.flush();
}

/** Raised again, the user needs a new key for ADMIN. A key left with no scope would grant nothing, so it is revoked. */
export async function withdrawAdminScope(tx: Em, userId: string): Promise<void> {
  const statement = sql`update api_keys set scopes = array_remove(scopes, 'ADMIN'),
                               revoked_at = case when scopes = array['ADMIN'] then coalesce(revoked_at, now()) else revoked_at end
                         where user_id = ${userId} and 'ADMIN' = any(scopes)`;
  await tx.execute(statement.sql, statement.values, 'run');
}
