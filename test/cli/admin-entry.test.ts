/**
 * The CLI as an operator runs it: `npm run admin -- …` as its own process, against the service
 * over HTTP. Exit codes reach the shell; `import:records` still works, as a deprecated alias.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { startService, type TestService } from '../support/harness.js';
import { cliEnv, npmRun } from '../support/admin-cli.js';

let service: TestService;
const dir = mkdtempSync(join(tmpdir(), 'admin-entry-'));
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('npm run admin', { timeout: 120_000 }, () => {
  it('prints help, runs a command with --json, and exits with the documented codes', async () => {
    const help = await npmRun('admin', ['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: admin');

    const name = `Spawned ${randomUUID()}`;
    const created = await npmRun('admin', ['org', 'create', name, '--json'], cliEnv(service));
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ name, skipTraceCredits: 0 });

    const wrongToken = await npmRun('admin', ['org', 'list'], { ...cliEnv(service), INTERNAL_API_TOKEN: 'wrong-platform-token' });
    expect(wrongToken.code).toBe(EXIT.unauthenticated);
    expect(wrongToken.stderr).toContain(`The service at ${service.baseUrl} refused the platform token`);
    expect(wrongToken.stderr).not.toMatch(/^\s+at /m);
  });

  it('import:records is an alias of records import that says it is deprecated', async () => {
    const path = join(dir, 'records.jsonl');
    const line1 = `9 ${randomUUID().slice(0, 8)} Street`;
    writeFileSync(
      path,
      [
        JSON.stringify({ address: { line1, city: 'Austin', state: 'TX', zip: '78701' }, owners: [{ type: 'person', firstName: 'Lena' }] }),
        JSON.stringify({ address: { line1, city: 'Austin', state: 'TX' }, owners: [] }),
      ].join('\n'),
    );
    const result = await npmRun('import:records', [path], cliEnv(service));
    expect(result.stderr.split('\n')[0]).toBe(
      'import:records is deprecated and will be removed in the next release: use `npm run admin -- records import FILE`.',
    );
    expect(result.stderr).toContain('rejected line 2: address.zip');
    expect(result.stdout).toContain('Imported 1 records');
    expect(result.code).toBe(EXIT.recordsRejected);
  });
});
