/**
 * The same-SQL floor: the service's REST routes done by hand (`../lib/floor-kit.ts`), sending
 * exactly the statements the service sends now, the same way (checked against PostgreSQL's
 * statement log), in the same order and with the same concurrency. When the service's statements
 * change, this file changes with them; `naive.ts` stays as the service was.
 *
 * The gateway as the service runs it: every statement a named prepared statement; the key looked
 * up (`findActiveGatewayKey`) while a point of its rate window, keyed by the key's hash, is spent
 * in Redis, before the body is read; then the operation's statements, which are those of the
 * naive floor for reads (a feed page and its totals in parallel, or the counter rows) and a mark
 * that returns the changed ids and publishes its event. The skip trace is `same-sql-skip-trace.ts`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  bearer,
  bound,
  consumeWindow,
  GATEWAY_LIMIT,
  HttpError,
  readJson,
  redis,
  setWindowHeaders,
  sha256,
  USER_WRITE_LOCK,
  type FloorRoutes,
} from '../lib/floor-kit.js';
import { counts, listNotifications, markAllNotificationsRead, type UserKey } from './naive.js';
import { skipTrace } from './same-sql-skip-trace.js';

/** The service's key lookup (`findActiveGatewayKey`); null without a row. */
async function gatewayKey(hash: string): Promise<UserKey | null> {
  const { rows } = await bound(
    `select k.id, k.key_hash, k.scopes, u.id as user_id, u.organization_id, u.role
       from api_keys k join users u on u.id = k.user_id
      where k.key_hash = $1 and k.revoked_at is null`,
    [hash],
  );
  return (rows[0] as UserKey | undefined) ?? null;
}

/** The service's mark by ids (`updateSeen`, the changed ids returned), then its change event (`notification-events.ts`). */
async function markNotificationsRead(userId: string, v: Record<string, unknown>) {
  const isSeen = v.isSeen as boolean;
  const ids = [...new Set((v.notificationIds as string[]).map((id) => id.toLowerCase()))].sort();
  const { rows } = await bound(
    `with ${USER_WRITE_LOCK}
     update notifications set is_seen = $2, seen_at = ${isSeen ? 'now()' : 'null'} from serialized
      where user_id = $3 and id = any($4::uuid[]) and is_seen <> $5 returning id`,
    [userId, isSeen, userId, `{${ids.join(',')}}`, isSeen],
  );
  // The service's change event: the owner's counts, published on the event bus (Redis).
  if (rows.length) {
    const c = await counts(userId, null);
    await redis.publish(
      `notifications:events:${userId}`,
      JSON.stringify({ events: [{ kind: 'updated', ids: rows.map((r) => r.id) }], counts: c.byType }),
    );
  }
  return { success: true, updatedCount: rows.length };
}

async function gateway(req: IncomingMessage, res: ServerResponse) {
  const token = bearer(req);
  if (!token?.startsWith('gk_')) throw new HttpError(401, 'invalid_key');
  const hash = sha256(token);
  // The service's credential stage: the lookup and the window's point in parallel, then the body.
  const [key, decision] = await Promise.all([gatewayKey(hash), consumeWindow(`gateway:${hash.slice(0, 32)}`, GATEWAY_LIMIT)]);
  if (!key) throw new HttpError(401, 'invalid_key');
  setWindowHeaders(res, decision);
  if (!decision.allowed) throw new HttpError(429, 'rate_limited');
  const body = await readJson(req);
  const variables = (body.variables ?? {}) as Record<string, unknown>;
  switch (body.operationId) {
    case 'listNotifications':
      return listNotifications(key.user_id, variables);
    case 'getNotificationCounts': {
      const c = await counts(key.user_id, (variables.notificationTypeFilter as string | undefined) || null);
      return { unreadCount: c.unread, readCount: c.read, byType: c.byType };
    }
    case 'markNotificationsRead':
      return markNotificationsRead(key.user_id, variables);
    case 'markAllNotificationsRead':
      return markAllNotificationsRead(key.user_id, variables);
    default:
      throw new HttpError(404, 'unknown_operation');
  }
}

export const sameSqlFloor: FloorRoutes = { gateway, skipTrace, preparedStatements: true };
