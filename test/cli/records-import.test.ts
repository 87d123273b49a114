/**
 * `admin records import FILE` against the real service: CSV and JSON Lines files with bad rows
 * (the summary counts only committed records, each rejection names its line, exit 2), batches cut
 * by count and by bytes under the `/graphql` body limit, and a batch the service refuses narrowed
 * down to the records at fault.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PlatformClient } from '../../src/cli/client.js';
import { EXIT } from '../../src/cli/exit-codes.js';
import { BATCH_BYTES_MAX, importBatch, type ImportProgress } from '../../src/cli/records/import-records.js';
import { startService, type TestService } from '../support/harness.js';
import { admin, cliEnv, closedUrl } from '../support/admin-cli.js';

let service: TestService;
let env: Record<string, string>;
const dir = mkdtempSync(join(tmpdir(), 'admin-records-'));
beforeAll(async () => {
  service = await startService();
  env = cliEnv(service);
});
afterAll(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A street name unique to this run: with DATABASE_URL the tables outlive the test. */
const street = () => `${Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('')} Street`;
const austin = (line1: string) => ({ line1, city: 'Austin', state: 'TX', zip: '78701' });
const file = (name: string, content: string) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
/**
 * An HTTP hop in front of the service that forwards the first `count` requests and then drops the
 * connection of every later one, as a service that goes away midway would.
 */
async function proxyFailingAfter(count: number): Promise<{ url: string; close(): Promise<void> }> {
  let seen = 0;
  const server: Server = createServer(async (request, response) => {
    if (++seen > count) return request.socket.destroy();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const answer = await fetch(service.baseUrl + request.url, {
      method: request.method,
      headers: { 'content-type': 'application/json', authorization: String(request.headers.authorization) },
      body: Buffer.concat(chunks),
    });
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Properties stored on a street, and the persons behind them. */
async function stored(name: string): Promise<{ properties: number; persons: number }> {
  const [row] = await service.sql<{ properties: number; persons: number }>(
    `select count(distinct p.id)::int as properties, count(pp.id)::int as persons
       from properties p left join property_owners o on o.property_id = p.id left join property_persons pp on pp.owner_id = o.id
      where p.line1 ilike ?`,
    [`%${name.split(' ')[0]}%`],
  );
  return row;
}

describe('records import', () => {
  it('imports a CSV file, grouping rows by address; a bad row is rejected by its line, the rest committed (exit 2)', async () => {
    const name = street();
    const path = file(
      'records.csv',
      [
        'line1,line2,city,state,zip,owner_type,owner_name,first_name,last_name,middle_name,age,phones,emails',
        `5 ${name},Apt 2,Austin,tx,78701,person,,John,"O'Brien, ""Jr""",,40,"(512) 555-0100:mobile|512 555 0101",john@example.com`,
        `"5 ${name.toUpperCase().replace('STREET', 'ST')} #2",,AUSTIN,TX,78701-1234,entity,"Acme, L.L.C.",Bob,Smith,,,,`,
        `6 ${name},,Austin,ZZ,78701,person,,Bad,State,,,,`,
        `7 ${name},,Austin,TX,78701,person,,Ann,Lee,,,5125550102:MOBILE,`,
      ].join('\r\n'),
    );
    const result = await admin(['records', 'import', path, '--json'], env);
    expect(result.code).toBe(EXIT.recordsRejected);
    const summary = JSON.parse(result.stdout);
    expect(summary).toMatchObject({ file: path, imported: 2 });
    expect(summary.rejected).toEqual([
      { source: 'line 4', message: expect.stringMatching(/^address\.state must be a two-letter USPS state code/) },
    ]);
    expect(await stored(name)).toEqual({ properties: 2, persons: 3 });

    // The same file again, for people: one line per rejection on stderr, the summary on stdout. Owners are replaced, not added.
    const text = await admin(['records', 'import', path], env);
    expect(text.code).toBe(EXIT.recordsRejected);
    expect(text.stderr).toMatch(/^rejected line 4: address\.state must be a two-letter USPS state code/m);
    expect(text.stdout).toMatch(/^Imported 2 records from .*records\.csv in [\d.]+s; rejected 1\.\n$/);
    expect(await stored(name)).toEqual({ properties: 2, persons: 3 });
  });

  it('imports a JSON Lines file in batches; a line that is not JSON and an invalid record are rejected by line', async () => {
    const name = street();
    const good = (n: number) => JSON.stringify({ address: austin(`${n} ${name}`), owners: [{ type: 'person', firstName: `P${n}` }] });
    const path = file(
      'records.jsonl',
      [
        good(1),
        good(2),
        '{"address": ',
        JSON.stringify({ address: austin(`4 ${name}`), owners: [{ type: 'entity' }] }),
        good(5),
        '',
        good(7),
      ].join('\n'),
    );
    const result = await admin(['records', 'import', path, '--batch-size', '2', '--json'], env);
    expect(result.code).toBe(EXIT.recordsRejected);
    const summary = JSON.parse(result.stdout);
    expect(summary.imported).toBe(4);
    expect(summary.rejected).toEqual([
      { source: 'line 3', message: 'not valid JSON' },
      { source: 'line 4', message: 'owners.0.name is required for an entity and must contain letters or digits' },
    ]);
    expect(await stored(name)).toEqual({ properties: 4, persons: 4 });
  });

  it('a file without bad rows exits 0; an empty one imports nothing', async () => {
    const name = street();
    const ok = await admin(
      ['records', 'import', file('ok.ndjson', `${JSON.stringify({ address: austin(`1 ${name}`), owners: [] })}\n`)],
      env,
    );
    expect(ok.code).toBe(EXIT.ok);
    expect(ok.stdout).toContain('Imported 1 records');
    expect(ok.stderr).toBe('');
    const empty = await admin(['records', 'import', file('empty.jsonl', '\n')], env);
    expect(empty.code).toBe(EXIT.ok);
    expect(empty.stdout).toContain('Imported 0 records');
  });

  it('cuts batches by bytes below the 4 MiB body limit, and rejects a record too large for any request', async () => {
    const name = street();
    // ~1.2 MB of JSON per record: 100 persons with 40 long emails each.
    const persons = Array.from({ length: 100 }, (_, p) => ({
      firstName: `P${p}`,
      emails: Array.from({ length: 40 }, (_, e) => `${'a'.repeat(290)}${p}x${e}@example.com`),
    }));
    const record = (n: number, owners = 1) => ({
      address: austin(`${n} ${name}`),
      owners: Array.from({ length: owners }, (_, o) => ({ type: 'entity', name: `Holding ${o} LLC`, persons })),
    });
    const big = [1, 2, 3, 4].map((n) => record(n));
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(4 * 1024 * 1024);
    // Sent in one request, they would be refused whole.
    const whole = await service.graphql(`mutation($input: [PropertyRecordInput!]!) { importPropertyRecords(input: $input) { imported } }`, {
      input: big,
    });
    expect(whole.status).toBe(413);

    const tooLarge = record(5, 3);
    expect(Buffer.byteLength(JSON.stringify(tooLarge))).toBeGreaterThan(BATCH_BYTES_MAX);
    const path = file('big.jsonl', [...big, tooLarge].map((r) => JSON.stringify(r)).join('\n'));
    const result = await admin(['records', 'import', path, '--json'], env);
    const summary = JSON.parse(result.stdout);
    expect(summary.imported).toBe(4);
    expect(summary.rejected).toEqual([
      { source: 'line 5', message: expect.stringMatching(/^the record is \d+ bytes of JSON; one request carries at most/) },
    ]);
    expect(result.code).toBe(EXIT.recordsRejected);
    expect(await stored(name)).toEqual({ properties: 4, persons: 400 });
  }, 120_000);

  it('narrows a batch the service refuses down to the records at fault, and imports the others', async () => {
    const name = street();
    const sourced = [
      { record: { address: austin(`1 ${name}`), owners: [{ type: 'person', firstName: 'A' }] }, source: 'line 1' },
      // GraphQL's input types refuse this one with no path to the record.
      { record: { address: austin(`2 ${name}`), owners: [{ type: 'person', age: 'forty' }] }, source: 'line 2' },
      { record: { address: austin(`3 ${name}`), owners: [{ type: 'person', firstName: 'C' }] }, source: 'line 3' },
      // The import's validation refuses this one, pointing at `input.3`.
      { record: { address: { ...austin(`4 ${name}`), state: 'ZZ' }, owners: [] }, source: 'line 4' },
      { record: { address: austin(`5 ${name}`), owners: [{ type: 'person', firstName: 'E' }] }, source: 'line 5' },
    ];
    const progress: ImportProgress = { imported: 0, rejected: [] };
    await importBatch(new PlatformClient(service.baseUrl, service.platformToken), sourced, progress);
    expect(progress.imported).toBe(3);
    expect(progress.rejected).toEqual(
      expect.arrayContaining([
        { source: 'line 2', message: expect.stringContaining('Int cannot represent') },
        { source: 'line 4', message: expect.stringMatching(/^address\.state must be a two-letter USPS state code/) },
      ]),
    );
    expect(progress.rejected).toHaveLength(2);
    expect(await stored(name)).toEqual({ properties: 3, persons: 3 });
  });

  it('usage errors: no format, bad batch size, unreadable file, bad CSV header (exit 64, nothing sent)', async () => {
    expect((await admin(['records', 'import', file('records.txt', '{}')], env)).stderr).toContain('pass --format csv or --format jsonl');
    expect((await admin(['records', 'import', file('records.txt', '{}')], env)).code).toBe(EXIT.usage);
    expect((await admin(['records', 'import', file('a.jsonl', ''), '--batch-size', '1001'], env)).code).toBe(EXIT.usage);
    const missing = await admin(['records', 'import', join(dir, 'missing.csv')], env);
    expect(missing.code).toBe(EXIT.usage);
    expect(missing.stderr).toContain(`cannot read ${join(dir, 'missing.csv')}`);
    const header = await admin(['records', 'import', file('bad.csv', 'line1,city,state,zip,colour\n')], env);
    expect(header.code).toBe(EXIT.usage);
    expect(header.stderr).toContain('unknown CSV columns: colour');
  });

  it('stops when the service goes away midway, counting only the batches it committed', async () => {
    const name = street();
    const proxy = await proxyFailingAfter(2);
    try {
      const lines = [1, 2, 3, 4, 5].map((n) =>
        JSON.stringify({ address: austin(`${n} ${name}`), owners: [{ type: 'person', firstName: `P${n}` }] }),
      );
      const path = file('midway.jsonl', lines.join('\n'));
      const result = await admin(['records', 'import', path, '--batch-size', '1'], { ...env, API_URL: proxy.url });
      expect(result.code).toBe(EXIT.unreachable);
      expect(result.stderr).toContain('Import stopped: 2 records were committed before the failure and stay imported');
      expect(result.stdout).toBe('');
      expect(await stored(name)).toEqual({ properties: 2, persons: 2 });
    } finally {
      await proxy.close();
    }
  });

  it('stops when the service cannot be reached, saying nothing was committed (exit 69)', async () => {
    const url = await closedUrl();
    const path = file('unreachable.jsonl', JSON.stringify({ address: austin(`1 ${street()}`), owners: [] }));
    const result = await admin(['records', 'import', path], { ...env, API_URL: url });
    expect(result.code).toBe(EXIT.unreachable);
    expect(result.stderr).toContain(`Cannot reach the service at ${url}`);
    expect(result.stderr).toContain('Import stopped: 0 records were committed');
    expect(result.stdout).toBe('');
  });
});
