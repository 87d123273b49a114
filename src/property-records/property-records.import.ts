import { atMostItems } from '../common/detail-messages.js';
import { badInput } from '../common/errors.js';
import type { Em } from '../infra/database/orm.js';
import { replacePropertyRecords } from './property-records.data.js';
import { checkPropertyRecords, IMPORT_MAX, type PropertyRecordInput } from './property-records.validation.js';

/** All or nothing. A later record for an address replaces an earlier one, as a later call would. */
export async function importPropertyRecords(em: Em, records: readonly PropertyRecordInput[]): Promise<{ imported: number }> {
  if (records.length > IMPORT_MAX)
    throw badInput(`input may hold at most ${IMPORT_MAX} records.`, [{ path: 'input', message: atMostItems(IMPORT_MAX) }]);
  const { rows, details } = checkPropertyRecords(records);
  if (details.length > 0) throw badInput('Some property records are invalid.', details);
  await replacePropertyRecords(em, rows);
  return { imported: records.length };
}
