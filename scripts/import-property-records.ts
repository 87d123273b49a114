/**
 * Imports property records for the `records` skip-trace provider from a CSV or JSON Lines file.
 *
 *   npm run import:records -- <file> [--format csv|jsonl] [--batch-size 500]
 *
 * JSON Lines: one PropertyRecordInput per line. CSV: one row per person, with the header
 *   line1,line2,city,state,zip,owner_type,owner_name,first_name,last_name,middle_name,age,phones,emails
 * (phones `number:type|number:type`, emails `a@x|b@y`). Rows of one address (any spelling) form one
 * record; rows of one entity (same owner_name) form one owner with its persons.
 *
 * Invalid records are reported with their line numbers and skipped; the rest are imported.
 * Exit code: 0 all imported, 2 some records rejected, 1 failure.
 *
 * Uses DATABASE_URL, or the embedded database under DATA_DIR. An embedded data dir belongs to one
 * process: if a server (or another import) has it open, the import refuses before writing anything
 * (exit 1). The summary counts only records whose batch was committed.
 */
import cliProgress from 'cli-progress';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/infra/config.js';
import { DataDirInUseError } from '../src/infra/database/data-dir-lock.js';
import { openDatabase } from '../src/infra/database/orm.js';
import { addressKey, normalizeEntityName, standardizeAddress } from '../src/skip-trace/address/index.js';
import { importPropertyRecords } from '../src/skip-trace/records/property-records.import.js';
import {
  checkPropertyRecord,
  type PropertyOwnerInput,
  type PropertyPersonInput,
  type PropertyRecordInput,
} from '../src/skip-trace/records/property-records.validation.js';

const CSV_COLUMNS = [
  'line1',
  'line2',
  'city',
  'state',
  'zip',
  'owner_type',
  'owner_name',
  'first_name',
  'last_name',
  'middle_name',
  'age',
  'phones',
  'emails',
] as const;
type CsvRow = Record<(typeof CSV_COLUMNS)[number], string>;

/** A record with where it came from, for error messages. */
interface SourcedRecord {
  record: unknown;
  source: string;
}

class UsageError extends Error {}

// ---------------------------------------------------------------------------
// Reading

/** RFC 4180 CSV: quoted fields may hold commas, newlines and doubled quotes. Returns rows with their first line number. */
function parseCsv(text: string): { line: number; fields: string[] }[] {
  const rows: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let rowLine = 1;
  const endRow = () => {
    fields.push(field);
    if (fields.length > 1 || fields[0] !== '') rows.push({ line: rowLine, fields });
    fields = [];
    field = '';
  };
  for (let i = text.charCodeAt(0) === 0xfeff ? 1 : 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '\n') line++;
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (text[i + 1] === '"') field += text[i++];
      else quoted = false;
    } else if (ch === '"' && field === '') quoted = true;
    else if (ch === ',') {
      fields.push(field);
      field = '';
    } else if (ch === '\n' || (ch === '\r' && text[i + 1] === '\n')) {
      if (ch === '\r') {
        i++;
        line++;
      }
      endRow();
      rowLine = line;
    } else field += ch;
  }
  if (quoted) throw new UsageError(`line ${rowLine}: a quoted field is not closed`);
  if (field !== '' || fields.length > 0) endRow();
  return rows;
}

const splitList = (s: string) =>
  s
    .split('|')
    .map((x) => x.trim())
    .filter((x) => x !== '');

/** Leaves odd values as they are, so validation reports them rather than the reader guessing. */
function csvPerson(row: CsvRow): PropertyPersonInput | null {
  const person: Record<string, unknown> = {
    firstName: row.first_name || undefined,
    lastName: row.last_name || undefined,
    middleName: row.middle_name || undefined,
    age: row.age === '' ? undefined : /^\d+$/u.test(row.age) ? Number(row.age) : row.age,
    phones: splitList(row.phones).map((p) => {
      const colon = p.lastIndexOf(':');
      return colon < 0 ? { number: p } : { number: p.slice(0, colon).trim(), type: p.slice(colon + 1).trim() || undefined };
    }),
    emails: splitList(row.emails),
  };
  const empty = Object.values(person).every((v) => v === undefined || (Array.isArray(v) && v.length === 0));
  return empty ? null : (person as PropertyPersonInput);
}

/** Groups CSV rows by standardized address, and entity rows by normalized owner name. */
function csvRecords(text: string): SourcedRecord[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  const columns = header.fields.map((f) => f.trim().toLowerCase());
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  if (unknown.length) throw new UsageError(`unknown CSV columns: ${unknown.join(', ')} (expected ${CSV_COLUMNS.join(',')})`);
  const missing = ['line1', 'city', 'state', 'zip'].filter((c) => !columns.includes(c));
  if (missing.length) throw new UsageError(`missing CSV columns: ${missing.join(', ')}`);

  const records = new Map<string, { record: PropertyRecordInput & { owners: PropertyOwnerInput[] }; lines: number[] }>();
  for (const { line, fields } of rows) {
    if (fields.every((f) => f.trim() === '')) continue; // spreadsheets export blank rows as ",,,,"
    const row = Object.fromEntries(CSV_COLUMNS.map((c) => [c, (fields[columns.indexOf(c)] ?? '').trim()])) as CsvRow;
    const address = { line1: row.line1, line2: row.line2 || undefined, city: row.city, state: row.state, zip: row.zip };
    const key = addressKey(standardizeAddress(address));
    const entry = records.get(key) ?? { record: { address, owners: [] }, lines: [] };
    records.set(key, entry);
    entry.lines.push(line);
    const type = (row.owner_type || (row.owner_name ? 'entity' : 'person')).toLowerCase();
    const person = csvPerson(row);
    if (type !== 'entity') {
      // A stray owner_name on a person row is passed on, so validation flags it.
      entry.record.owners.push({ ...person, type: type as 'person', ...(row.owner_name ? { name: row.owner_name } : {}) });
      continue;
    }
    const nameKey = normalizeEntityName(row.owner_name) || row.owner_name;
    let owner = entry.record.owners.find((o) => o.type === 'entity' && (normalizeEntityName(o.name ?? '') || o.name) === nameKey);
    if (!owner) {
      owner = { type: 'entity', name: row.owner_name, persons: [] };
      entry.record.owners.push(owner);
    }
    if (person) (owner.persons as PropertyPersonInput[]).push(person);
  }
  return [...records.values()].map(({ record, lines }) => ({
    record,
    source: lines.length === 1 ? `line ${lines[0]}` : `lines ${lines.join(', ')}`,
  }));
}

function jsonlRecords(text: string): { records: SourcedRecord[]; rejected: string[] } {
  const records: SourcedRecord[] = [];
  const rejected: string[] = [];
  text.split(/\r?\n/u).forEach((content, i) => {
    if (content.trim() === '') return;
    try {
      records.push({ record: JSON.parse(content), source: `line ${i + 1}` });
    } catch {
      rejected.push(`line ${i + 1}: not valid JSON`);
    }
  });
  return { records, rejected };
}

// ---------------------------------------------------------------------------
// Importing

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { format: { type: 'string' }, 'batch-size': { type: 'string', default: '500' } },
  });
  const [file] = positionals;
  if (!file || positionals.length > 1)
    throw new UsageError('usage: import-property-records <file> [--format csv|jsonl] [--batch-size 500]');
  const format =
    values.format ??
    (extname(file).toLowerCase() === '.csv'
      ? 'csv'
      : extname(file)
            .toLowerCase()
            .match(/^\.(jsonl|ndjson)$/u)
        ? 'jsonl'
        : undefined);
  if (format !== 'csv' && format !== 'jsonl')
    throw new UsageError('pass --format csv or --format jsonl (the file extension does not tell)');
  const batchSize = Number(values['batch-size']);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 1000)
    throw new UsageError('--batch-size must be an integer from 1 to 1000');

  const text = readFileSync(file, 'utf8');
  const { records, rejected } = format === 'csv' ? { records: csvRecords(text), rejected: [] as string[] } : jsonlRecords(text);

  const config = loadConfig();
  if (config.database.kind === 'embedded' && config.database.dataDir.startsWith('memory://')) {
    console.error('warning: DATA_DIR is memory://, so the import is discarded when this process exits.');
  }
  const db = await openDatabase(config.database);
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'importing [{bar}] {value}/{total} records | {eta_formatted} left' },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let imported = 0;
  try {
    bar.start(records.length, 0);
    for (let start = 0; start < records.length; start += batchSize) {
      const batch = records.slice(start, start + batchSize);
      const valid: PropertyRecordInput[] = [];
      for (const { record, source } of batch) {
        const details = checkPropertyRecord(record);
        if (details.length === 0) valid.push(record as PropertyRecordInput);
        else rejected.push(`${source}: ${details.map((d) => (d.path ? `${d.path} ${d.message}` : d.message)).join('; ')}`);
      }
      // Each batch is its own transaction: a failure leaves earlier batches imported.
      imported += (await importPropertyRecords(db.orm.em.fork(), valid)).imported;
      bar.update(start + batch.length);
    }
  } catch (error) {
    bar.stop(); // before the message; stopping again below does nothing
    console.error(`Import failed; ${imported} records were committed before the failure and stay imported.`);
    throw error;
  } finally {
    bar.stop();
    await db.close();
  }

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  for (const problem of rejected.slice(0, 100)) console.error(`rejected ${problem}`);
  if (rejected.length > 100) console.error(`… and ${rejected.length - 100} more rejected records`);
  console.log(`Imported ${imported} records from ${file} in ${seconds}s; rejected ${rejected.length}.`);
  return rejected.length > 0 ? 2 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof UsageError || error instanceof DataDirInUseError ? error.message : error);
    process.exit(1);
  },
);
