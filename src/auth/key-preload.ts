import type { Sql } from '../infra/database/sql.js';
import { gatewayKeyOwnerOf, type GatewayKeyOwner, type GatewayKeyOwnerColumns } from './api-keys.data.js';

/**
 * Folding the gateway key lookup into an operation's own statement: one round trip for both.
 *
 * A read-only root field may declare a *preload* (`keyPreload` below, in its Pothos `extensions`):
 * a function that starts its statement for a gateway key known only by its hash, that statement
 * beginning with `with k as (${GATEWAY_KEY_OWNER})` and returning the key's columns with the
 * field's data (no rows for an unknown or revoked key). The REST handler starts it once the body
 * and variables are read, concurrently with the key's rate window; the principal is settled from
 * the key's columns (401 and 429 first, as ever), scope auth then runs on that principal as on any
 * other, and the resolver takes the preloaded value (`preloadedValue` in schema/context.ts)
 * instead of querying again. A refused request (any of 401, 429, 403) discards the rows: the
 * statement only ever reads. Without a preload (mutations, /graphql, other fields) the key is
 * looked up on its own, as before.
 */

/** What a preload started: the key's owner and the field's value, both from one statement. */
export interface KeyPreload<V = unknown> {
  /** The key's owner, or null: the key is unknown or revoked (the request is then refused, the value never used). */
  owner: Promise<GatewayKeyOwner | null>;
  /** The field's value for that owner. */
  value: Promise<V>;
}

/**
 * Starts a root field's statement for the key with this hash and the field's arguments (as
 * graphql-js coerces them); null when it cannot for these arguments (input the resolver refuses
 * with its own error), and the resolver then runs as it would without it.
 */
export type FieldPreload = (sql: Sql, keyHash: string, args: Record<string, unknown>) => KeyPreload | null;

const PRELOAD = 'gatewayKeyPreload';

/** A root field's `extensions` entry declaring its preload. */
export const keyPreload = (preload: FieldPreload) => ({ [PRELOAD]: preload });

/** The preload a field declared, if any. */
export const preloadOf = (extensions: Readonly<Record<string, unknown>> | null | undefined): FieldPreload | undefined =>
  extensions?.[PRELOAD] as FieldPreload | undefined;

/**
 * Splits one statement's rows (each carrying the key's columns, selected as `k.*`) into the key's
 * owner and the value computed from them for that owner.
 */
export function splitRows<R extends GatewayKeyOwnerColumns, V>(
  rows: Promise<R[]>,
  value: (rows: R[], owner: GatewayKeyOwner) => V,
): KeyPreload<V> {
  const owner = rows.then((r) => gatewayKeyOwnerOf(r[0]));
  const result: KeyPreload<V> = {
    owner,
    value: Promise.all([rows, owner]).then(([r, o]) => {
      if (!o) throw new Error('No value for a key that is not active.');
      return value(r, o);
    }),
  };
  // The value is used only once the owner settled a principal: never an unhandled rejection meanwhile.
  result.value.catch(() => undefined);
  return result;
}
