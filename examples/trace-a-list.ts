/**
 * Traces a list: uploads a CSV as a skip trace job, shows a progress bar from the job's
 * subscription (`watchSkipTraceJob`, Server-Sent Events on /graphql), then writes the results CSV
 * (your columns as you sent them, then status, trace_id, error_code and the persons found).
 *
 *   API_URL=http://localhost:4000 SKIPTRACE_KEY=stk_… npx tsx examples/trace-a-list.ts leads.csv results.csv
 *
 * The CSV needs a header row naming line1, city, state and zip (any case); key, line2, actor_type,
 * first_name, last_name and actor_name are read too, and any other column comes back unchanged.
 */
import { createWriteStream, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import cliProgress from 'cli-progress';

const [input, output = 'results.csv'] = process.argv.slice(2);
if (!input) throw new Error('usage: trace-a-list.ts INPUT.csv [OUTPUT.csv]');
const api = process.env.API_URL ?? 'http://localhost:4000';
const key = process.env.SKIPTRACE_KEY;
if (!key) throw new Error('Set SKIPTRACE_KEY to your skip trace key (stk_…).');
const auth = { authorization: `Bearer ${key}` };

/** An error answer as one line: status, code, message and request id. */
async function fail(response: Response): Promise<never> {
  const body = (await response.json().catch(() => null)) as { error?: { code: string; message: string; details?: unknown } } | null;
  const details = body?.error?.details ? ` ${JSON.stringify(body.error.details)}` : '';
  throw new Error(
    `${response.status} ${body?.error?.code}: ${body?.error?.message}${details} (request ${response.headers.get('x-request-id')})`,
  );
}

// 1. Upload: 202 with the job.
const created = await fetch(`${api}/api/v1/skiptrace/jobs`, {
  method: 'POST',
  headers: { ...auth, 'content-type': 'text/csv' },
  body: readFileSync(input),
});
if (created.status !== 202) await fail(created);
const job = (await created.json()) as { id: string; counts: { total: number } };
console.log(`job ${job.id}: ${job.counts.total} rows`);

// 2. Progress: the job each time its counts change, until it ends.
const watch = await fetch(`${api}/graphql`, {
  method: 'POST',
  headers: { ...auth, 'content-type': 'application/json', accept: 'text/event-stream' },
  body: JSON.stringify({
    query: `subscription($id: ID!) { watchSkipTraceJob(id: $id) { status counts { total pending recordsFound noRecordsFound failed cancelled charged } } }`,
    variables: { id: job.id },
  }),
});
if (!watch.ok || !watch.body) await fail(watch);
const bar = new cliProgress.SingleBar(
  { format: '{bar} {value}/{total} rows | {status}', noTTYOutput: true, stream: process.stdout },
  cliProgress.Presets.shades_classic,
);
bar.start(job.counts.total, 0, { status: 'queued' });
let last: { status: string; counts: Record<string, number> } | undefined;
let buffer = '';
for await (const chunk of watch.body!.pipeThrough(new TextDecoderStream())) {
  buffer += chunk;
  let end: number;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const event = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    const data = event
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trim())
      .join('');
    if (!event.startsWith('event: next') || !data) continue;
    const payload = JSON.parse(data) as { data?: { watchSkipTraceJob: typeof last }; errors?: unknown };
    if (payload.errors) throw new Error(`watchSkipTraceJob: ${JSON.stringify(payload.errors)}`);
    last = payload.data!.watchSkipTraceJob!;
    bar.update(last.counts.total - last.counts.pending, { status: last.status });
  }
}
bar.stop();
if (!last) throw new Error('The progress stream ended without a word about the job.');
const { counts } = last;
console.log(
  `${last.status}: ${counts.recordsFound} found, ${counts.noRecordsFound} without records, ${counts.failed} failed, ${counts.cancelled} cancelled; ${counts.charged} credits`,
);

// 3. Results: the whole job as CSV, streamed to the file.
const results = await fetch(`${api}/api/v1/skiptrace/jobs/${job.id}/results`, { headers: { ...auth, accept: 'text/csv' } });
if (!results.ok || !results.body) await fail(results);
await pipeline(Readable.fromWeb(results.body! as WebReadableStream), createWriteStream(output));
console.log(`wrote ${output}`);
