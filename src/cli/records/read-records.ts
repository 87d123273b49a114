/** Formats: README, "The admin CLI" (`records import`). Each record keeps its lines for error messages. */
import { addressKey, normalizeEntityName, standardizeAddress } from '../../address/index.js';
import type { PropertyOwnerInput, PropertyPersonInput, PropertyRecordInput } from '../../property-records/property-records.validation.js';
import { usageError } from '../exit-codes.js';

export const CSV_COLUMNS = [
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

export interface SourcedRecord {
  record: unknown;
  /** `line 4`, or `lines 2, 5` for a CSV record of several rows. */
  source: string;
}

export interface Rejection {
  source: string;
  message: string;
}

/** RFC 4180: quoted fields may hold commas, newlines and doubled quotes. */
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
  if (quoted) throw usageError(`line ${rowLine}: a quoted field is not closed`);
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

/** Rows of one address (any spelling) form one record; rows of one entity, one owner. */
export function csvRecords(text: string): SourcedRecord[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  const columns = header.fields.map((f) => f.trim().toLowerCase());
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  if (unknown.length) throw usageError(`unknown CSV columns: ${unknown.join(', ')} (expected ${CSV_COLUMNS.join(',')})`);
  const missing = ['line1', 'city', 'state', 'zip'].filter((c) => !columns.includes(c));
  if (missing.length) throw usageError(`missing CSV columns: ${missing.join(', ')}`);

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

export function jsonlRecords(text: string): { records: SourcedRecord[]; rejected: Rejection[] } {
  const records: SourcedRecord[] = [];
  const rejected: Rejection[] = [];
  text.split(/\r?\n/u).forEach((content, i) => {
    if (content.trim() === '') return;
    try {
      records.push({ record: JSON.parse(content), source: `line ${i + 1}` });
    } catch {
      rejected.push({ source: `line ${i + 1}`, message: 'not valid JSON' });
    }
  });
  return { records, rejected };
}
