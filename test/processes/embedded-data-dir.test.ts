/**
 * An embedded data dir belongs to one process. A second `npm start`, or the import CLI, on a data
 * dir that a server has open refuses at once, naming the dir, exits non-zero and writes nothing;
 * the server goes on serving its data. A server stopped with SIGTERM frees the dir at once; one
 * killed with SIGKILL leaves a lock that the next start takes over within DATA_DIR_LOCK_STALE_MS.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_DIR_LOCK_STALE_MS } from '../../src/infra/database/data-dir-lock.js';
import { json, runServiceToExit, spawnService, type ServiceProcess } from './spawn-service.js';

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

function runImport() {
  const started = Date.now();
  const result = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import-property-records.ts', recordsFile], {
    env: { ...process.env, ...embedded, LOG_LEVEL: 'silent' },
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

  it('refuses the import CLI while a server holds the dir; after the server stops, the import lands and is traced', async () => {
    const refused = runImport();
    console.log(`import while held: exit ${refused.status} after ${refused.ms} ms: ${refused.stderr.trim()}`);
    expect(refused.status).toBe(1);
    expectRefusal(refused.stderr);
    expect(refused.stdout).not.toContain('Imported');
    // The server's data is intact and still served.
    expect(await notificationCount(running!)).toBe(40);
    expect((await trace(running!, demoAddress)).body.status).toBe('records_found');

    // SIGTERM releases the dir at once: the import right after it succeeds.
    expect(await running!.stop()).toBe(0);
    const imported = runImport();
    expect(imported.stderr).not.toContain('already open');
    expect(imported.stdout).toContain('Imported 1 records');
    expect(imported.status).toBe(0);

    running = await spawnService(embedded);
    const traced = await trace(running, importedAddress);
    expect(traced.status).toBe(200);
    expect(traced.body.status).toBe('records_found');
    expect(traced.body.persons).toMatchObject([{ firstName: 'Lena', lastName: 'Lock' }]);
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
