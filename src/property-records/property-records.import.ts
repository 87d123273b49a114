/**
 * Property records: the data behind the `records` skip-trace provider, imported in batches
 * (GraphQL `importPropertyRecords`, which the admin CLI's `records import` calls; the demo seed).
 */
import { atMostItems } from '../common/detail-messages.js';
import { badInput } from '../common/errors.js';
import type { Em } from '../infra/database/orm.js';
import { replacePropertyRecords } from './property-records.data.js';
import { checkPropertyRecords, IMPORT_MAX, type PropertyRecordInput } from './property-records.validation.js';

/**
 * Stores each record's property and replaces its owners, in one transaction. Within one call a
 * later record for an address replaces an earlier one, as a later call would. Rejects the whole
 * call if any record is invalid.
 */
export async function importPropertyRecords(em: Em, records: readonly PropertyRecordInput[]): Promise<{ imported: number }> {
  if (records.length > IMPORT_MAX)
    throw badInput(`input may hold at most ${IMPORT_MAX} records.`, [{ path: 'input', message: atMostItems(IMPORT_MAX) }]);
  const { rows, details } = checkPropertyRecords(records);
  if (details.length > 0) throw badInput('Some property records are invalid.', details);
  await replacePropertyRecords(em, rows);
  return { imported: records.length };
}
