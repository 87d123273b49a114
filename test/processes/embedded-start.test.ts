/**
 * README, Quick start: `npm start` with no DATABASE_URL and no REDIS_URL runs on an embedded
 * PostgreSQL under DATA_DIR, migrated at start, windows in process; a brand-new data dir gets the
 * demo seed, whose keys are printed once (with the demo organization and user ids, as one block on
 * stderr) and work; a restart on the same dir keeps the data and prints the ids and the keys' hints,
 * never a key. Runs the bundle exactly as `npm start` does (spawn-service.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationsList } from '../../migrations/index.js';
import { bannerOf, json, spawnService, type ServiceProcess } from './spawn-service.js';

const dataDir = mkdtempSync(join(tmpdir(), 'embedded-start-'));
// Empty values count as unset (config.ts), overriding the CI environment's real servers.
const embedded = { DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir };
let running: ServiceProcess | undefined;

afterAll(async () => {
  await running?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Distinct keys in the output (the banner shows each key and then uses it in its curl lines). */
const printedKeys = (service: ServiceProcess) => [...new Set(service.logs.join('').match(/\b(?:gk|stk)_[0-9A-Za-z]{40}\b/g) ?? [])];
const viewerOf = async (service: ServiceProcess, key: string) =>
  (await json(`${service.url}/api/v1/call`, { bearer: key, body: JSON.stringify({ operationId: 'viewer' }) })).body.data;
const hintOf = (key: string) => `${key.slice(0, 8)}…${key.slice(-4)}`;
const counts = (service: ServiceProcess, key: string) =>
  json(`${service.url}/api/v1/call`, { bearer: key, body: JSON.stringify({ operationId: 'getNotificationCounts', variables: {} }) });

describe('npm start on a fresh machine (embedded database, no Redis)', () => {
  let gatewayKey: string;
  let skipTraceKey: string;
  let ids: { organizationId: string; userId: string };

  it('seeds a new data dir, prints the demo ids and keys once in a block on stderr, and serves them', async () => {
    running = await spawnService(embedded);
    const ready = await fetch(`${running.url}/readyz`).then((r) => r.json());
    expect(ready).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'not configured' } });

    const banner = await bannerOf(running);
    expect(running.logs.join('').match(/Demo data seeded/g)).toHaveLength(1);
    const keys = printedKeys(running);
    expect(keys).toHaveLength(2);
    gatewayKey = keys.find((k) => k.startsWith('gk_'))!;
    skipTraceKey = keys.find((k) => k.startsWith('stk_'))!;
    // The banner's ids are the ones the keys act for (viewer), and it says how to start over.
    const viewer = await viewerOf(running, gatewayKey);
    ids = { organizationId: viewer.organizationId, userId: viewer.userId };
    expect(banner).toContain(`organization:   ${ids.organizationId}`);
    expect(banner).toContain(`user:           ${ids.userId}`);
    expect(banner).toContain(`gateway key:    ${gatewayKey}`);
    expect(banner).toContain(`skip trace key: ${skipTraceKey}`);
    expect(banner).toContain(`rm -rf ${dataDir}`);
    // Nothing of the banner is mixed into the JSON log lines on stdout.
    expect(running.logs.join('').split(banner)).toHaveLength(2);

    const badge = await counts(running, gatewayKey);
    expect(badge.status).toBe(200);
    expect(badge.body.data.unreadCount + badge.body.data.readCount).toBe(40);
    expect(badge.headers.get('x-ratelimit-limit')).toBe('1000');

    const trace = await json(`${running.url}/api/v1/skiptrace`, {
      bearer: skipTraceKey,
      body: JSON.stringify({ address: { line1: '123 Main Street Apt 4', city: 'Austin', state: 'tx', zip: '78701' } }),
    });
    expect(trace.status).toBe(200);
    expect(trace.body.status).toBe('records_found');
  });

  it('reopens the same data dir without seeding again or printing a key, reprints the ids and hints, and the data is still there', async () => {
    expect(await running!.stop()).toBe(0);
    running = await spawnService(embedded);
    // Ready means ready: the first call after the first 200 on /readyz is served (start-up defers
    // nothing a call needs: migrations checked, key lookup, compiled operation, rate window).
    const first = await counts(running, gatewayKey);
    expect(first.status).toBe(200);
    expect(first.body.data.unreadCount + first.body.data.readCount).toBe(40);
    const banner = await bannerOf(running);
    expect(printedKeys(running)).toEqual([]);
    expect(running.logs.join('')).not.toContain('Demo data seeded');
    expect(banner).toContain(`organization:   ${ids.organizationId}`);
    expect(banner).toContain(`user:           ${ids.userId}`);
    expect(banner).toContain(`gateway key:    ${hintOf(gatewayKey)}`);
    expect(banner).toContain(`skip trace key: ${hintOf(skipTraceKey)}`);
    expect(banner).toContain(`rm -rf ${dataDir}`);
    const badge = await counts(running, gatewayKey);
    expect(badge.status).toBe(200);
    expect(badge.body.data.unreadCount + badge.body.data.readCount).toBe(40);
  });

  it("unpacks another new data dir from the build's template with its own demo data and keys (the template holds no rows)", async () => {
    const manifest = JSON.parse(readFileSync('dist/embedded-template.json', 'utf8')) as { migrations: string[] };
    expect(manifest.migrations).toEqual(migrationsList.map((migration) => migration.name));
    const otherDir = mkdtempSync(join(tmpdir(), 'embedded-start-other-'));
    const other = await spawnService({ ...embedded, DATA_DIR: otherDir });
    try {
      const keys = printedKeys(other);
      expect(keys).toHaveLength(2);
      expect(keys).not.toContain(gatewayKey);
      const viewer = await viewerOf(
        other,
        keys.find((k) => k.startsWith('gk_'))!,
      );
      expect(viewer.organizationId).not.toBe(ids.organizationId);
      // The unpacked database was seeded like any new one: the demo feed is there.
      const badge = await counts(
        other,
        keys.find((k) => k.startsWith('gk_'))!,
      );
      expect(badge.body.data.unreadCount + badge.body.data.readCount).toBe(40);
    } finally {
      await other.stop();
      rmSync(otherDir, { recursive: true, force: true });
    }
  });
});
