/**
 * The primary key charges an item once per key and body: a retry after a crash runs only the
 * uncharged items, and of two racing charges the second fails on the key.
 */
import { sql, type Db, type Statement } from '../../infra/database/sql.js';
import { loseCarrierCtes, RETENTION } from './idempotency-keys.data.js';

export interface KeyedList {
  organizationId: string;
  key: string;
  fingerprint: string;
}

/** Deletes expired rows in the same statement, so a key used again after 24 h charges anew. */
export async function chargedItems<Result>(db: Db, list: KeyedList): Promise<Map<number, Result>> {
  const rows = await db.rows<{ item_index: number; result: Result | string }>(
    sql`with gone as (delete from skip_trace_batch_items where ${ofList(list)} and expires_at <= now())
      select item_index, result from skip_trace_batch_items where ${ofList(list)} and expires_at > now()`,
  );
  return new Map(rows.map((row) => [row.item_index, typeof row.result === 'string' ? (JSON.parse(row.result) as Result) : row.result]));
}

const ofList = (list: KeyedList) =>
  sql`organization_id = ${list.organizationId} and idempotency_key = ${list.key} and fingerprint = ${list.fingerprint}`;

/** Written only when `charged` holds a row; expires with its key. */
export const chargedItemCte = (list: KeyedList, index: number, item: { requestId: string; result: unknown }): Statement =>
  sql`keyed_item as (insert into skip_trace_batch_items (organization_id, idempotency_key, fingerprint, item_index, request_id, result, expires_at)
     select ${list.organizationId}, ${list.key}, ${list.fingerprint}, ${index}::integer, ${item.requestId}::uuid, ${JSON.stringify(item.result)}::jsonb,
       coalesce((select expires_at from skip_trace_idempotency_keys where organization_id = ${list.organizationId} and idempotency_key = ${list.key}), now() + ${RETENTION})
     from charged)`;

/** So a retry runs the refunded item anew. */
export const refundedItemCte = (requestId: string): Statement =>
  sql`unkept_item as (delete from skip_trace_batch_items where request_id = ${requestId}::uuid and exists (select from removed))`;

/**
 * The last carrier also deletes the item rows, so the key's next request runs every item anew.
 * True then: the items are to be refunded.
 */
export async function loseBatchCarrier(db: Db, batchId: string): Promise<boolean> {
  const [row] = await db.rows<{ forgotten: boolean }>(
    sql`with ${loseCarrierCtes(batchId)},
       unkept_items as (delete from skip_trace_batch_items i using lost where lost.carriers = 0 and i.organization_id = lost.organization_id
         and i.idempotency_key = lost.idempotency_key and i.fingerprint = lost.fingerprint)
     select exists (select from forgotten) as forgotten`,
  );
  return row.forgotten === true;
}

export async function deleteExpiredItems(db: Db, batch: number): Promise<number> {
  return db.run(
    sql`delete from skip_trace_batch_items where ctid in (
       select ctid from skip_trace_batch_items where expires_at <= now() order by expires_at limit ${batch} for update skip locked)`,
  );
}
