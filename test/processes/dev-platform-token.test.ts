/**
 * README, Quick start: the quick start can be administered. `npm start` in embedded mode without
 * INTERNAL_API_TOKEN (outside production) makes a development platform token at the data dir's
 * first start, keeps it in the data dir (mode 0600) and prints it with the `export` line the admin
 * CLI needs; later starts say where it is and still accept it. Never in production or on
 * PostgreSQL: there the start-up log says how to provision the first organization. Every banner
 * says where the reference, GraphiQL and the OpenAPI document are. Runs the bundle as `npm start`
 * does (spawn-service.ts).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { npmRun } from '../support/admin-cli.js';
import { bannerOf, graphql, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

const dataDir = mkdtempSync(join(tmpdir(), 'dev-token-'));
const tokenFile = join(dataDir, 'platform-token');
// Empty values count as unset (config.ts): no database server, no Redis, no platform token.
const quickStart = { DATABASE_URL: '', REDIS_URL: '', INTERNAL_API_TOKEN: '', NODE_ENV: 'development', DATA_DIR: dataDir };
let running: ServiceProcess | undefined;

afterAll(async () => {
  await running?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const organizations = (service: ServiceProcess, token: string) =>
  graphql(service, '{ organizations(first: 1) { nodes { id } } }', {}, token);
const port = (service: ServiceProcess) => new URL(service.url).port;

function expectWhereToLook(banner: string, service: ServiceProcess) {
  for (const path of ['/docs', '/graphql', '/openapi.json']) expect(banner).toContain(`http://localhost:${port(service)}${path}`);
}

describe('the quick start can be administered', () => {
  let token: string;

  it('the first start makes a development platform token, keeps it in the data dir (0600) and prints its export line', async () => {
    running = await spawnService(quickStart);
    const banner = await bannerOf(running);
    token = /export INTERNAL_API_TOKEN=(\S+)/.exec(banner)?.[1] ?? '';
    expect(token.length).toBeGreaterThanOrEqual(16);
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(banner).toContain(tokenFile);
    expectWhereToLook(banner, running);
    // The token is the platform's: provisioning works with it, and with nothing else.
    expect((await organizations(running, token)).body.data.organizations.nodes).toHaveLength(1);
    expect((await organizations(running, 'pt_not_the_token_0000000')).status).toBe(401);
    // The admin CLI, run as the README says, finds it in the data dir by itself.
    const cli = await npmRun('admin', ['org', 'list', '--json'], { API_URL: running.url, DATA_DIR: dataDir });
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout).nodes.length).toBeGreaterThanOrEqual(1);
    // And the token never reaches the JSON log lines.
    expect(running.logs.join('').split(token)).toHaveLength(banner.split(token).length);
  });

  it('a later start prints where the token is, not the token, and still accepts it', async () => {
    expect(await running!.stop()).toBe(0);
    running = await spawnService(quickStart);
    const banner = await bannerOf(running);
    expect(running.logs.join('')).not.toContain(token);
    expect(banner).toContain(`export INTERNAL_API_TOKEN=$(cat ${tokenFile})`);
    expectWhereToLook(banner, running);
    expect((await organizations(running, token)).status).toBe(200);
    expect(readFileSync(tokenFile, 'utf8').trim()).toBe(token);
    expect(await running.stop()).toBe(0);
    running = undefined;
  });

  it('a data dir in memory keeps its token in memory only', async () => {
    running = await spawnService({ ...quickStart, DATA_DIR: 'memory://', SEED_DEMO: 'false' });
    const banner = await bannerOf(running);
    const inMemory = /export INTERNAL_API_TOKEN=(\S+)/.exec(banner)?.[1] ?? '';
    expect((await organizations(running, inMemory)).status).toBe(200);
    expect(await running.stop()).toBe(0);
    running = undefined;
  });
});

describe('never in production or on PostgreSQL', () => {
  const noToken = /INTERNAL_API_TOKEN is not set: nothing has platform access[\s\S]*To provision the first organization/;

  it('NODE_ENV=production in embedded mode: no token made, and the log says how to provision the first organization', async () => {
    const prodDir = mkdtempSync(join(tmpdir(), 'dev-token-prod-'));
    try {
      running = await spawnService({ ...quickStart, NODE_ENV: 'production', DATA_DIR: prodDir, LOG_LEVEL: 'info' });
      expect(existsSync(join(prodDir, 'platform-token'))).toBe(false);
      expect(running.logs.join('')).toMatch(noToken);
      expect(running.logs.join('')).not.toContain('export INTERNAL_API_TOKEN=');
      expect(await running.stop()).toBe(0);
      running = undefined;
    } finally {
      rmSync(prodDir, { recursive: true, force: true });
    }
  });

  it('DATABASE_URL set: no token made, even outside production, and the log says the same', async () => {
    const { databaseUrl, redisUrl } = requireRealBackends();
    const pgDir = mkdtempSync(join(tmpdir(), 'dev-token-pg-'));
    try {
      running = await spawnService({
        ...quickStart,
        DATABASE_URL: databaseUrl,
        REDIS_URL: redisUrl,
        DATA_DIR: pgDir,
        LOG_LEVEL: 'info',
      });
      expect(existsSync(join(pgDir, 'platform-token'))).toBe(false);
      expect(running.logs.join('')).toMatch(noToken);
      expect(running.logs.join('')).not.toContain('export INTERNAL_API_TOKEN=');
      expect(await running.stop()).toBe(0);
      running = undefined;
    } finally {
      rmSync(pgDir, { recursive: true, force: true });
    }
  });
});
