import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/infra/config.js';

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 4000,
      logLevel: 'info',
      database: { kind: 'embedded', dataDir: './data' },
      limits: {
        gatewayPerMinute: 1000,
        authFailuresPerMinute: 120,
        skipTracePerMinute: 1000,
        skipTraceMaxInFlight: 10,
        skipTraceTimeoutMs: 30000,
        skipTraceBatchConcurrency: 10,
        maxKeysPerUser: 25,
      },
    });
    expect(config.redisUrl).toBeUndefined();
    expect(config.internalApiToken).toBeUndefined();
  });

  it('listens on loopback in embedded mode and on every interface with DATABASE_URL, unless HOST says otherwise', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/app' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '::1', DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/app' }).host).toBe('::1');
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['GATEWAY_RATE_LIMIT_PER_MIN', '0'],
    ['MAX_KEYS_PER_USER', '0'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['REDIS_URL', 'http://localhost'],
    ['LOG_LEVEL', 'loud'],
    ['INTERNAL_API_TOKEN', 'short'],
    ['PUBLIC_URL', 'api.example.com'],
    ['PUBLIC_URL', 'ftp://api.example.com'],
    ['DATABASE_REPLICA_URL', 'mysql://localhost/db'],
    // A replica needs its primary: without DATABASE_URL it is refused.
    ['DATABASE_REPLICA_URL', 'postgres://postgres@127.0.0.1:5433/app'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('reads from a replica only when one is given, beside its primary', () => {
    const primary = 'postgres://postgres@127.0.0.1:5432/app';
    expect(loadConfig({ DATABASE_URL: primary }).database).not.toHaveProperty('replica');
    expect(loadConfig({ DATABASE_URL: primary, DATABASE_REPLICA_URL: 'postgres://postgres@127.0.0.1:5433/app' }).database).toMatchObject({
      replica: { url: 'postgres://postgres@127.0.0.1:5433/app', timeoutMs: 500 },
    });
  });

  it('says what a database or Redis URL must look like, not just that it is invalid', () => {
    expect(() => loadConfig({ DATABASE_URL: 'localhost:5432/db' })).toThrow(/DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(() => loadConfig({ REDIS_URL: '127.0.0.1:6379' })).toThrow(/REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/);
  });

  it.each([
    [{ PORT: 'not-a-port' }, /^ {2}PORT: /m],
    [{ DATABASE_URL: 'localhost:5432/db' }, /^ {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL, e\.g\. postgres:\/\//m],
    [{ DATABASE_URL: 'mysql://localhost/db' }, /^ {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/m],
  ])('stops start-up with %j named, in words and without a stack trace', (env, message) => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^Invalid configuration:\n/);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});
