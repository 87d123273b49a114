/** Only results go to stdout, so it can be piped; notes and errors go to stderr. */
import { type CliError } from './exit-codes.js';

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Only then is a progress bar drawn. */
  stderrIsTty: boolean;
  env: Record<string, string | undefined>;
}

export const processIo = (): CliIo => ({
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stderrIsTty: Boolean(process.stderr.isTTY),
  env: process.env,
});

type Row = Record<string, unknown>;

const cell = (value: unknown): string =>
  value === null || value === undefined
    ? '-'
    : Array.isArray(value)
      ? value.join(',')
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);

export class Output {
  constructor(
    private readonly io: CliIo,
    readonly json: boolean,
  ) {}

  record(value: Row): void {
    if (this.json) return this.io.stdout(`${JSON.stringify(value)}\n`);
    const width = Math.max(...Object.keys(value).map((k) => k.length));
    this.io.stdout(
      Object.entries(value)
        .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}\n`)
        .join(''),
    );
  }

  /** With --json, `json` (the whole result) is printed instead. */
  table(rows: readonly Row[], columns: readonly string[], json: unknown = rows): void {
    if (this.json) return this.io.stdout(`${JSON.stringify(json)}\n`);
    if (rows.length === 0) return this.io.stdout('(none)\n');
    const cells = [columns, ...rows.map((row) => columns.map((c) => cell(row[c])))];
    const widths = columns.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
    this.io.stdout(cells.map((r) => `${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')}\n`).join(''));
  }

  /** Silent with --json. */
  note(message: string): void {
    if (!this.json) this.io.stderr(`${message}\n`);
  }

  error(error: CliError): void {
    if (this.json) {
      const body = { code: error.code ?? null, message: error.message, exitCode: error.exitCode, details: error.details };
      return this.io.stderr(`${JSON.stringify({ error: body })}\n`);
    }
    const details = error.details.map((d) => `  ${d.path ? `${d.path}: ` : ''}${d.message}\n`).join('');
    this.io.stderr(`error: ${error.code ? `${error.code}: ` : ''}${error.message}\n${details}`);
  }
}
