/**
 * An embedded data dir belongs to one process. A second `npm start` on a data dir that a server
 * has open refuses at once, naming the dir, exits non-zero and writes nothing; the server goes on
 * serving its data. The import CLI (`admin records import`) never opens the dir: it imports
 * through the server that holds it. A server stopped with SIGTERM frees the dir at once; one
 * killed with SIGKILL leaves a lock that the next start takes over within DATA_DIR_LOCK_STALE_MS.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_DIR_LOCK_STALE_MS } from '../../src/infra/database/data-dir-lock.js';
import { json, platformToken, runServiceToExit, spawnService, type ServiceProcess } from './spawn-service.js';

const dataDir = mkdtempSync(join(tmpdir(), 'embedded-data-dir-'));
// Empty values count as unset (config.ts), overriding the CI environment's real servers.
const embedded = { DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir };
const recordsFile = `${dataDir}-records.jsonl`;
const importedAddress = { line1: '9 Lockstep Lane', city: 'Austin', state: 'TX', zip: '78701' };
const demoAddress = { line1: '123 Main Street Apt 4', city: 'Austin', state: 'tx', zip: '78701' };

let running: ServiceProcess | undefined;
let skipTraceKey: string;
let gatewayKey: string;

beforeAll(async () => {
  writeFileSync(
    recordsFile,
    `${JSON.stringify({ address: importedAddress, owners: [{ type: 'person', firstName: 'Lena', lastName: 'Lock' }] })}\n`,
  );
  running = await spawnService(embedded);
  const output = running.logs.join('');
  skipTraceKey = output.match(/\bstk_[0-9A-Za-z]{40}\b/)![0];
  gatewayKey = output.match(/\bgk_[0-9A-Za-z]{40}\b/)![0];
});

afterAll(async () => {
  await running?.stop();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(recordsFile, { force: true });
});

const trace = (service: ServiceProcess, address: typeof importedAddress) =>
  json(`${service.url}/api/v1/skiptrace`, { bearer: skipTraceKey, body: JSON.stringify({ address }) });
const notificationCount = async (service: ServiceProcess) => {
  const { body } = await json(`${service.url}/api/v1/call`, {
    bearer: gatewayKey,
    body: JSON.stringify({ operationId: 'getNotificationCounts', variables: {} }),
  });
  return body.data.unreadCount + body.data.readCount;
};

/** The admin CLI's import, pointed at a server by URL, with the platform token. */
function runImport(url: string) {
  const started = Date.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'records', 'import', recordsFile], {
    env: { ...process.env, ...embedded, API_URL: url, INTERNAL_API_TOKEN: platformToken },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { ...result, ms: Date.now() - started };
}

/** The refusal: one line naming the dir, no stack trace. */
function expectRefusal(output: string) {
  expect(output).toContain(`The embedded data dir ${dataDir} is already open in another process`);
  expect(output).not.toMatch(/^\s+at /m);
}

describe('an embedded data dir belongs to one process', () => {
  it('refuses a second npm start on the same data dir at once, and the first keeps serving', async () => {
    const second = await runServiceToExit(embedded);
    console.log(`second start: exit ${second.code} after ${second.ms} ms: ${second.output.trim()}`);
    expect(second.code).toBe(1);
    expect(second.ms).toBeLessThan(5_000);
    expectRefusal(second.output);

    expect((await fetch(`${running!.url}/readyz`)).status).toBe(200);
    expect(await notificationCount(running!)).toBe(40);
  });

  it('refuses to start on a port already in use in one line, and frees its own data dir on the way out', async () => {
    const otherDir = mkdtempSync(join(tmpdir(), 'embedded-port-taken-'));
    try {
      const port = new URL(running!.url).port;
      const second = await runServiceToExit({ ...embedded, DATA_DIR: otherDir, PORT: port, SEED_DEMO: 'false' }, 60_000);
      console.log(`port in use: exit ${second.code} after ${second.ms} ms: ${second.output.trim()}`);
      expect(second.code).toBe(1);
      expect(second.output).toContain(`Port ${port} on 127.0.0.1 is already in use`);
      expect(second.output).not.toMatch(/^\s+at /m);
      // Its data dir was released: a start on it now gets past the lock (and is refused only for the port).
      const third = await runServiceToExit({ ...embedded, DATA_DIR: otherDir, PORT: port, SEED_DEMO: 'false' }, 60_000);
      expect(third.output).toContain('is already in use');
      expect(third.output).not.toContain('already open in another process');
    } finally {
      rmSync(otherDir, { recursive: true, force: true });
    }
  });

  it('the import CLI goes through the server that holds the dir; with the server stopped it imports nothing and says so', async () => {
    const imported = runImport(running!.url);
    console.log(`import while held: exit ${imported.status} after ${imported.ms} ms: ${imported.stdout.trim()}`);
    expect(imported.stderr).toBe('');
    expect(imported.stdout).toContain('Imported 1 records');
    expect(imported.status).toBe(0);
    const traced = await trace(running!, importedAddress);
    expect(traced.status).toBe(200);
    expect(traced.body.status).toBe('records_found');
    expect(traced.body.persons).toMatchObject([{ firstName: 'Lena', lastName: 'Lock' }]);
    // The server's own data is intact.
    expect(await notificationCount(running!)).toBe(40);
    expect((await trace(running!, demoAddress)).body.status).toBe('records_found');

    // No server: the CLI reports the URL it could not reach, exits 69 and reports no import.
    const url = running!.url;
    expect(await running!.stop()).toBe(0);
    const refused = runImport(url);
    expect(refused.status).toBe(69);
    expect(refused.stderr).toContain(`Cannot reach the service at ${url}`);
    expect(refused.stderr).toContain('0 records were committed');
    expect(refused.stdout).not.toContain('Imported');

    // What the first import stored survives the restart.
    running = await spawnService(embedded);
    expect((await trace(running, importedAddress)).body.status).toBe('records_found');
  });

  it('after a SIGKILL, the next start takes the dir over within the stale time, and holds it again', async () => {
    running!.child.kill('SIGKILL');
    await running!.exited;
    const started = Date.now();
    running = await spawnService(embedded);
    const recoveryMs = Date.now() - started;
    console.log(`start after SIGKILL: ready in ${recoveryMs} ms (lock stale after ${DATA_DIR_LOCK_STALE_MS} ms)`);
    // The stale time plus an ordinary start, with room for a slow machine.
    expect(recoveryMs).toBeLessThan(DATA_DIR_LOCK_STALE_MS + 15_000);
    expect(await notificationCount(running)).toBe(40);
    expect((await trace(running, importedAddress)).body.status).toBe('records_found');

    const second = await runServiceToExit(embedded);
    expect(second.code).toBe(1);
    expectRefusal(second.output);
  });
});
