/**
 * Sends property records to `importPropertyRecords` in batches and accounts for each one: a
 * record counts as imported only once the call that carried it returned (its transaction
 * committed); every other record is either rejected, with its line and why, or left unsent when
 * the import stops on a failure.
 */
import { checkPropertyRecord } from '../../property-records/property-records.validation.js';
import { graphqlDocument, type PlatformClient } from '../client.js';
import { CliError, type ErrorDetail } from '../exit-codes.js';
import type { Rejection, SourcedRecord } from './read-records.js';

/** The mutation's own limit on records per call. */
export const IMPORT_BATCH_MAX = 1000;
/**
 * JSON bytes of records per call. `/graphql` refuses bodies over 4 MiB; this leaves room for the
 * document and JSON escaping, so a batch is cut by size before it reaches the limit.
 */
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

/**
 * The import's validation accepts a few spellings GraphQL's input types do not (`MOBILE`, a phone
 * number as a JSON number): a record it accepted is sent in GraphQL's spelling.
 */
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

/** Splits checked records into batches of at most `batchSize` records and BATCH_BYTES_MAX bytes. */
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

/** The record indexes that BAD_USER_INPUT details point at (`input.3.owners.0.name`), with their details. */
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
 * Imports one batch. When the service refuses it as BAD_USER_INPUT, the records its details
 * point at are rejected and the rest sent again; a refusal that points at no record (a GraphQL
 * input-type error) is narrowed down by halving the batch, so one bad record never costs the
 * others. Any other failure stops the import (thrown), after what was committed is counted.
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
