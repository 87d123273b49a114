import cliProgress from 'cli-progress';
import { Option, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { action, integerIn, type CommandContext, type RunState } from '../context.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';
import type { CliIo } from '../output.js';
import { batches, IMPORT_BATCH_MAX, importBatch, type ImportProgress } from '../records/import-records.js';
import { csvRecords, jsonlRecords, type Rejection, type SourcedRecord } from '../records/read-records.js';

/** Past it, rejections are only counted (--json has them all). */
const REJECTIONS_SHOWN = 100;

function formatOf(file: string, format: string | undefined): 'csv' | 'jsonl' {
  const extension = extname(file).toLowerCase();
  const chosen = format ?? (extension === '.csv' ? 'csv' : ['.jsonl', '.ndjson'].includes(extension) ? 'jsonl' : undefined);
  if (chosen !== 'csv' && chosen !== 'jsonl') throw usageError('pass --format csv or --format jsonl (the file extension does not tell)');
  return chosen;
}

function readRecords(file: string, format: 'csv' | 'jsonl'): { records: SourcedRecord[]; rejected: Rejection[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw usageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  return format === 'csv' ? { records: csvRecords(text), rejected: [] } : jsonlRecords(text);
}

async function importFile(ctx: CommandContext, file: string, options: Record<string, unknown>) {
  const { records, rejected } = readRecords(file, formatOf(file, options.format as string | undefined));
  const client = ctx.client();
  const progress: ImportProgress = { imported: 0, rejected };
  const bar =
    ctx.io.stderrIsTty && !ctx.out.json
      ? new cliProgress.SingleBar(
          { stream: process.stderr, format: 'importing [{bar}] {value}/{total} records | {eta_formatted} left' },
          cliProgress.Presets.shades_classic,
        )
      : null;
  const started = Date.now();
  bar?.start(records.length, 0);
  try {
    for (const { batch, consumed } of batches(records, options.batchSize as number, rejected)) {
      await importBatch(client, batch, progress);
      bar?.update(consumed);
    }
  } catch (error) {
    bar?.stop();
    if (error instanceof CliError)
      throw new CliError(
        error.exitCode,
        `${error.message}\nImport stopped: ${progress.imported} records were committed before the failure and stay imported (re-importing the file is safe: an address's owners are replaced).`,
        error.code,
        error.details,
      );
    throw error;
  }
  bar?.stop();

  const seconds = Number(((Date.now() - started) / 1000).toFixed(1));
  if (ctx.out.json) {
    ctx.out.record({ file, imported: progress.imported, rejected, seconds });
  } else {
    for (const problem of rejected.slice(0, REJECTIONS_SHOWN)) ctx.io.stderr(`rejected ${problem.source}: ${problem.message}\n`);
    if (rejected.length > REJECTIONS_SHOWN) ctx.io.stderr(`… and ${rejected.length - REJECTIONS_SHOWN} more rejected records\n`);
    ctx.io.stdout(`Imported ${progress.imported} records from ${file} in ${seconds}s; rejected ${rejected.length}.\n`);
  }
  return rejected.length > 0 ? EXIT.recordsRejected : EXIT.ok;
}

export function recordCommands(program: Command, io: CliIo, state: RunState): void {
  const records = program.command('records').description('property records for the records skip-trace provider');

  records
    .command('import')
    .description(
      'import a CSV or JSON Lines file; re-importing an address replaces its owners. Rejected records are listed with their line numbers, the rest are imported (exit 2 when any was rejected)',
    )
    .argument('<file>', 'a .csv, .jsonl or .ndjson file')
    .addOption(new Option('--format <format>', 'when the extension does not tell').choices(['csv', 'jsonl']))
    .addOption(
      new Option('--batch-size <n>', `records per request, 1 to ${IMPORT_BATCH_MAX}`)
        .argParser(integerIn(1, IMPORT_BATCH_MAX))
        .default(500),
    )
    .action(action(io, state, (ctx, [file], options) => importFile(ctx, file, options)));
}
