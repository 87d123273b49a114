/**
 * `skip_trace_batch_items`: the charged items of keyed batches, one row per (organization,
 * Idempotency-Key, body fingerprint, item index), written by the item's charge statement. Its
 * primary key makes an item's charge once per key and body: a retry of a batch whose process died
 * before storing its answer reads the items already charged and runs only the others, and two
 * statements racing to charge the same item cannot both commit (the second fails on the key).
 */
import { sql, type Db, type Statement } from '../../infra/database/sql.js';
import { loseCarrierCtes, RETENTION } from './idempotency-keys.data.js';

/** The key and body a keyed batch's items are charged under. */
export interface KeyedList {
  organizationId: string;
  key: string;
  fingerprint: string;
}

/**
 * The items of `list` charged already, by index, as their charge stored them. Rows whose 24 h
 * are over are deleted by the same statement, so a key used again after them charges anew.
 */
export async function chargedItems<Result>(db: Db, list: KeyedList): Promise<Map<number, Result>> {
  const rows = await db.rows<{ item_index: number; result: Result | string }>(
    sql`with gone as (delete from skip_trace_batch_items where ${ofList(list)} and expires_at <= now())
      select item_index, result from skip_trace_batch_items where ${ofList(list)} and expires_at > now()`,
  );
  return new Map(rows.map((row) => [row.item_index, typeof row.result === 'string' ? (JSON.parse(row.result) as Result) : row.result]));
}

const ofList = (list: KeyedList) =>
  sql`organization_id = ${list.organizationId} and idempotency_key = ${list.key} and fingerprint = ${list.fingerprint}`;

/**
 * Item `index`'s row, as a CTE of its charge's statement: written only when `charged` holds a row.
 * It expires with its key, so a key used again once its 24 h are over never finds it.
 */
export const chargedItemCte = (list: KeyedList, index: number, item: { requestId: string; result: unknown }): Statement =>
  sql`keyed_item as (insert into skip_trace_batch_items (organization_id, idempotency_key, fingerprint, item_index, request_id, result, expires_at)
     select ${list.organizationId}, ${list.key}, ${list.fingerprint}, ${index}::integer, ${item.requestId}::uuid, ${JSON.stringify(item.result)}::jsonb,
       coalesce((select expires_at from skip_trace_idempotency_keys where organization_id = ${list.organizationId} and idempotency_key = ${list.key}), now() + ${RETENTION})
     from charged)`;

/** A refunded charge's item, as a CTE of the refund's statement (`removed` holds a row when refunded): a retry runs it anew. */
export const refundedItemCte = (requestId: string): Statement =>
  sql`unkept_item as (delete from skip_trace_batch_items where request_id = ${requestId}::uuid and exists (select from removed))`;

/**
 * A lost response carrying keyed batch `batchId`'s stored answer (its first response or a
 * replay): its carrier is taken away, and the last one forgets the answer and deletes its item
 * rows in the same statement, so the key's next request runs every item anew. True when it was
 * the last: the items' charges are then to be refunded.
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

/** Deletes up to `batch` rows whose 24 h are over; the number deleted. */
export async function deleteExpiredItems(db: Db, batch: number): Promise<number> {
  return db.run(
    sql`delete from skip_trace_batch_items where ctid in (
       select ctid from skip_trace_batch_items where expires_at <= now() order by expires_at limit ${batch} for update skip locked)`,
  );
}
