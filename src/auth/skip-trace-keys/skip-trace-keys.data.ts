/**
 * The data of `skip_trace_keys`. Issuing, rotating and revoking are admin CRUD, through the
 * SkipTraceKey entity; the lookup of every request that presents a key is a hot path, on raw SQL.
 */
import type { Em } from '../../infra/database/orm.js';
import { sql, type Db } from '../../infra/database/sql.js';
import { pgTextArray } from '../../common/pg-array.js';
import { SkipTraceKey } from './skip-trace-key.entity.js';

/**
 * The active key whose secret hashes to `keyHash`, or null: one query on the unique `key_hash`
 * index, on every request that presents a skip trace key, never cached, so a revocation takes
 * effect at once on every instance.
 */
export async function findActiveSkipTraceKeyByHash(
  db: Db,
  keyHash: string,
): Promise<{ id: string; keyHash: string; organizationId: string } | null> {
  const [row] = await db.rows<{ id: string; key_hash: string; organization_id: string }>(
    sql`select id, key_hash, organization_id from skip_trace_keys where key_hash = ${keyHash} and revoked_at is null`,
  );
  return row ? { id: row.id, keyHash: row.key_hash, organizationId: row.organization_id } : null;
}

/**
 * Stores a new active key, in a transaction of its own (a savepoint inside the caller's), so a
 * key refused by the one-active-key index is not left in the caller's unit of work.
 */
export async function insertSkipTraceKey(
  em: Em,
  key: { organizationId: string; keyHash: string; hint: string; createdBy: string },
): Promise<SkipTraceKey> {
  return em.transactional(async (tx) => tx.create(SkipTraceKey, { ...key, revokedAt: null }));
}

/** Revokes the organization's active key; false when it has none. Conditional, so concurrent revocations revoke once. */
export async function revokeActiveSkipTraceKey(em: Em, organizationId: string): Promise<boolean> {
  return (await em.nativeUpdate(SkipTraceKey, { organizationId, revokedAt: null }, { revokedAt: new Date() })) > 0;
}

/** The active key of each of the organizations, by organization id. */
export async function activeSkipTraceKeys(em: Em, organizationIds: readonly string[]): Promise<Map<string, SkipTraceKey>> {
  if (organizationIds.length === 0) return new Map();
  const keys = await em.find(SkipTraceKey, { organizationId: { $in: [...organizationIds] }, revokedAt: null });
  return new Map(keys.map((key) => [key.organizationId, key]));
}

/** Which of `ids` are skip trace keys still active (not revoked or rotated away): an open stream's key re-check. */
export async function activeSkipTraceKeyIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.rows<{ id: string }>(
    sql`select id from skip_trace_keys where id = any(${pgTextArray(ids)}::uuid[]) and revoked_at is null`,
  );
  return new Set(rows.map((row) => row.id));
}
