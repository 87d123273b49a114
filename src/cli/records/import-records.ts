/** A record counts as imported only once its call returned (committed); any other is rejected, with why, or left unsent. */
import { checkPropertyRecord } from '../../property-records/property-records.validation.js';
import { graphqlDocument, type PlatformClient } from '../client.js';
import { CliError, type ErrorDetail } from '../exit-codes.js';
import type { Rejection, SourcedRecord } from './read-records.js';

/** The mutation's own limit on records per call. */
export const IMPORT_BATCH_MAX = 1000;
/** Below `/graphql`'s body limit (README, "The admin CLI"), leaving room for the document and JSON escaping. */
export const BATCH_BYTES_MAX = 3 * 1024 * 1024;

const IMPORT = graphqlDocument<{ importPropertyRecords: { imported: number } }, { input: unknown[] }>(
  `mutation ($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`,
);

export interface ImportProgress {
  imported: number;
  rejected: Rejection[];
}

const describe = (details: readonly { path?: string; message: string }[]) =>
  details.map((d) => (d.path ? `${d.path} ${d.message}` : d.message)).join('; ');

/** The validation accepts spellings GraphQL's input types do not (`MOBILE`, a numeric phone). */
function asGraphqlInput(record: unknown): unknown {
  if (typeof record !== 'object' || record === null) return record;
  const person = (p: Record<string, unknown>) => ({
    ...p,
    ...(Array.isArray(p.phones)
      ? {
          phones: p.phones.map((phone: Record<string, unknown>) => ({
            ...phone,
            number: String(phone.number),
            ...(typeof phone.type === 'string' ? { type: phone.type.trim().toLowerCase() } : {}),
          })),
        }
      : {}),
  });
  const r = record as { owners?: Record<string, unknown>[] };
  return {
    ...r,
    owners: r.owners?.map((o) => ({
      ...person(o),
      type: String(o.type).trim().toLowerCase(),
      ...(Array.isArray(o.persons) ? { persons: o.persons.map(person) } : {}),
    })),
  };
}

export function* batches(
  records: readonly SourcedRecord[],
  batchSize: number,
  rejected: Rejection[],
): Generator<{ batch: SourcedRecord[]; consumed: number }> {
  let batch: SourcedRecord[] = [];
  let bytes = 0;
  let consumed = 0;
  for (const sourced of records) {
    consumed++;
    const details = checkPropertyRecord(sourced.record);
    if (details.length > 0) {
      rejected.push({ source: sourced.source, message: describe(details) });
      continue;
    }
    const record = asGraphqlInput(sourced.record);
    const size = Buffer.byteLength(JSON.stringify(record));
    if (size > BATCH_BYTES_MAX) {
      rejected.push({
        source: sourced.source,
        message: `the record is ${size} bytes of JSON; one request carries at most ${BATCH_BYTES_MAX}`,
      });
      continue;
    }
    if (batch.length === batchSize || bytes + size > BATCH_BYTES_MAX) {
      yield { batch, consumed: consumed - 1 };
      batch = [];
      bytes = 0;
    }
    batch.push({ ...sourced, record });
    bytes += size;
  }
  if (batch.length > 0 || consumed > 0) yield { batch, consumed };
}

/** Null when a detail points at no record. */
function detailsByRecord(details: readonly ErrorDetail[], size: number): Map<number, ErrorDetail[]> | null {
  const byRecord = new Map<number, ErrorDetail[]>();
  for (const detail of details) {
    const match = /^input\.(\d+)\.?(.*)$/u.exec(detail.path ?? '');
    const index = match ? Number(match[1]) : NaN;
    if (!(index < size)) return null;
    byRecord.set(index, [...(byRecord.get(index) ?? []), { path: match![2], message: detail.message }]);
  }
  return byRecord.size > 0 ? byRecord : null;
}

/**
 * A refusal pointing at no record (a GraphQL input-type error) is narrowed down by halving, so one
 * bad record never costs the others. Any other failure stops the import.
 */
export async function importBatch(client: PlatformClient, batch: readonly SourcedRecord[], progress: ImportProgress): Promise<void> {
  if (batch.length === 0) return;
  try {
    const result = await client.request(IMPORT, { input: batch.map((r) => r.record) });
    progress.imported += result.importPropertyRecords.imported;
  } catch (error) {
    if (!(error instanceof CliError) || error.code !== 'BAD_USER_INPUT') throw error;
    const byRecord = detailsByRecord(error.details, batch.length);
    if (byRecord) {
      for (const [index, details] of byRecord) progress.rejected.push({ source: batch[index].source, message: describe(details) });
      return importBatch(
        client,
        batch.filter((_, i) => !byRecord.has(i)),
        progress,
      );
    }
    if (batch.length === 1) {
      progress.rejected.push({ source: batch[0].source, message: error.message });
      return;
    }
    const half = Math.ceil(batch.length / 2);
    await importBatch(client, batch.slice(0, half), progress);
    await importBatch(client, batch.slice(half), progress);
  }
}
