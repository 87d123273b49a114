/** Unknown upload columns are kept as they came, so the results CSV gives the caller's rows back unchanged. */
import { parse, CsvError } from 'csv-parse';
import { stringify } from 'csv-stringify';
import { Readable } from 'node:stream';
import { badInput, type ErrorDetail } from '../../common/errors.js';
import { containsNul, NUL_DETAIL } from '../../common/nul.js';
import type { JobItemRow, NewJobItem } from './jobs.data.js';

/** Lower case: headers match in any case. */
export const INPUT_COLUMNS = [
  'key',
  'line1',
  'line2',
  'city',
  'state',
  'zip',
  'actor_type',
  'first_name',
  'last_name',
  'actor_name',
] as const;
type InputColumn = (typeof INPUT_COLUMNS)[number];
const REQUIRED_COLUMNS: readonly InputColumn[] = ['line1', 'city', 'state', 'zip'];

export interface CsvJob {
  columns: string[];
  items: NewJobItem[];
  /** For 422s that name the line (the header is line 1). */
  lines: number[];
}

const refuse = (message: string, details: ErrorDetail[]) => badInput(message, details);
const lineDetail = (line: number, message: string): ErrorDetail => ({ path: `line ${line}`, message });

function columnPositions(header: string[]): Map<InputColumn, number> {
  const positions = new Map<InputColumn, number>();
  header.forEach((name, position) => {
    const column = name.trim().toLowerCase() as InputColumn;
    if (!(INPUT_COLUMNS as readonly string[]).includes(column)) return;
    if (positions.has(column)) throw refuse(`The CSV names the ${column} column twice.`, [lineDetail(1, `names ${column} twice`)]);
    positions.set(column, position);
  });
  const missing = REQUIRED_COLUMNS.filter((column) => !positions.has(column));
  if (missing.length)
    throw refuse(
      `The CSV header has no ${missing.join(', ')} column (columns: ${INPUT_COLUMNS.join(', ')}, any case).`,
      missing.map((column) => lineDetail(1, `has no ${column} column`)),
    );
  return positions;
}

function itemOf(cells: string[], positions: Map<InputColumn, number>): NewJobItem {
  const cell = (column: InputColumn) => {
    const position = positions.get(column);
    const value = position === undefined ? '' : (cells[position] ?? '');
    return value === '' ? null : value;
  };
  const type =
    cell('actor_type')?.trim().toLowerCase() ?? (cell('actor_name') ? 'entity' : cell('first_name') || cell('last_name') ? 'person' : null);
  const actor =
    type === null
      ? null
      : type === 'entity'
        ? { type, name: cell('actor_name') }
        : { type, firstName: cell('first_name'), lastName: cell('last_name') };
  const address = {
    line1: cell('line1') ?? '',
    line2: cell('line2'),
    city: cell('city') ?? '',
    state: cell('state') ?? '',
    zip: cell('zip') ?? '',
  };
  return { key: cell('key'), input: { address, ...(actor && { actor }) }, cells };
}

/** The parser reports the line a record ended on; quoted cells may hold line breaks. */
const firstLineOf = (record: string[], lastLine: number) => lastLine - record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);

export async function parseJobCsv(text: string, maxRows: number): Promise<CsvJob> {
  const parser = parse(text, { bom: true, info: true, skip_empty_lines: true });
  let header: string[] | null = null;
  let positions = new Map<InputColumn, number>();
  const items: NewJobItem[] = [];
  const lines: number[] = [];
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      const line = firstLineOf(record, info.lines);
      if (containsNul(record)) throw refuse('The CSV holds a U+0000 character.', [lineDetail(line, NUL_DETAIL)]);
      if (!header) {
        header = record;
        positions = columnPositions(header);
        continue;
      }
      if (items.length === maxRows)
        throw refuse(`The CSV has more than ${maxRows} data rows.`, [lineDetail(line, `is past the ${maxRows}th data row`)]);
      items.push(itemOf(record, positions));
      lines.push(line);
    }
  } catch (error) {
    if (error instanceof CsvError) {
      const line = (error as CsvError & { lines?: number }).lines ?? 1;
      throw refuse(`The CSV is malformed: ${error.message.replace(/^[^:]*: /, '')}`, [lineDetail(line, 'is not valid CSV')]);
    }
    throw error;
  }
  if (!header) throw refuse('The CSV is empty: send a header row, then 1 or more data rows.', [lineDetail(1, 'has no header row')]);
  if (items.length === 0) throw refuse('The CSV has no data rows.', [lineDetail(2, 'has no data row')]);
  return { columns: header, items, lines };
}

const JSON_JOB_COLUMNS = [...INPUT_COLUMNS];

const PERSONS = 3;
const PHONES = 3;
const EMAILS = 2;
const personColumns = (n: number) => [
  `p${n}_first_name`,
  `p${n}_middle_name`,
  `p${n}_last_name`,
  `p${n}_age`,
  ...Array.from({ length: PHONES }, (_, m) => [`p${n}_phone${m + 1}`, `p${n}_phone${m + 1}_type`]).flat(),
  ...Array.from({ length: EMAILS }, (_, m) => `p${n}_email${m + 1}`),
];
const RESULT_COLUMNS = ['status', 'trace_id', 'error_code', ...Array.from({ length: PERSONS }, (_, n) => personColumns(n + 1)).flat()];

export const resultsHeader = (columns: string[] | null) => [...(columns ?? JSON_JOB_COLUMNS), ...RESULT_COLUMNS];

interface CsvPerson {
  firstName: string | null;
  middleName: string | null;
  lastName: string | null;
  age: number | null;
  phones: { number: string; type: string }[];
  emails: string[];
}

const personCells = (person: CsvPerson | undefined) => [
  person?.firstName ?? '',
  person?.middleName ?? '',
  person?.lastName ?? '',
  person?.age ?? '',
  ...Array.from({ length: PHONES }, (_, m) => [person?.phones[m]?.number ?? '', person?.phones[m]?.type ?? '']).flat(),
  ...Array.from({ length: EMAILS }, (_, m) => person?.emails[m] ?? ''),
];

function jsonInputCells(item: JobItemRow): unknown[] {
  const address = (item.input.address ?? {}) as Record<string, unknown>;
  const actor = (item.input.actor ?? {}) as Record<string, unknown>;
  return [
    item.key,
    address.line1,
    address.line2,
    address.city,
    address.state,
    address.zip,
    actor.type,
    actor.firstName,
    actor.lastName,
    actor.name,
  ];
}

export function resultRow(item: JobItemRow, width: number): unknown[] {
  const input = item.cells ? [...item.cells, ...Array<string>(Math.max(0, width - item.cells.length)).fill('')] : jsonInputCells(item);
  const persons = (item.status === 'records_found' ? (item.persons ?? []) : []) as CsvPerson[];
  const traced = item.status === 'records_found' || item.status === 'no_records_found';
  return [
    ...input,
    item.status,
    traced ? (item.requestId ?? '') : '',
    item.error?.code ?? '',
    ...Array.from({ length: PERSONS }, (_, n) => personCells(persons[n])).flat(),
  ];
}

/** One page in memory at a time, whatever the job's size. */
export function resultsCsv(columns: string[] | null, pages: AsyncIterable<JobItemRow[]>): Readable {
  const width = columns?.length ?? JSON_JOB_COLUMNS.length;
  async function* rows() {
    yield resultsHeader(columns);
    for await (const page of pages) for (const item of page) yield resultRow(item, width);
  }
  return Readable.from(rows()).pipe(stringify({ record_delimiter: 'windows', cast: { boolean: (value) => String(value) } }));
}
