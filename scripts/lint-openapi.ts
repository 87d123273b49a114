/**
 * `npm run lint:openapi`: the OpenAPI document the service serves, linted by Redocly's
 * recommended rules and Spectral's `spectral:oas` ruleset; a warning of either fails the run.
 * The service is built in embedded mode (in memory), the document is asked of it as a caller
 * would, written to a temporary file and handed to both linters, offline: no telemetry, no
 * update check, no remote ruleset.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/infra/logger.js';
import { loadConfig } from '../src/infra/config.js';
import { buildApp } from '../src/app/app.js';

/** The origin the linted document names in `servers`, as a deployment would configure it. */
const LINTED_PUBLIC_URL = 'https://crm-api.test';
const OFFLINE_ENV = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1' };
const SPECTRAL_RULESET = 'extends: ["spectral:oas"]\n';

async function servedDocument(): Promise<string> {
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: 'memory://', PUBLIC_URL: LINTED_PUBLIC_URL });
  const app = await buildApp(config, createLogger(config.logLevel));
  try {
    await app.http.ready();
    const response = await app.http.inject({ method: 'GET', url: '/openapi.json' });
    if (response.statusCode !== 200) throw new Error(`GET /openapi.json answered ${response.statusCode}: ${response.body}`);
    return response.body;
  } finally {
    await app.close();
  }
}

function run(title: string, command: string, args: string[]): boolean {
  console.log(`\n==> ${title}`);
  const result = spawnSync(command, args, { stdio: 'inherit', env: OFFLINE_ENV });
  if (result.error) console.error(result.error.message);
  return result.status === 0;
}

const directory = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
try {
  const documentPath = join(directory, 'openapi.json');
  const rulesetPath = join(directory, '.spectral.yaml');
  writeFileSync(documentPath, await servedDocument());
  writeFileSync(rulesetPath, SPECTRAL_RULESET);
  const bin = (name: string) => join(import.meta.dirname, '..', 'node_modules', '.bin', name);
  const redocly = run('Redocly (recommended rules, warnings fail)', bin('redocly'), [
    'lint',
    '--extends=recommended-strict',
    '--format=stylish',
    documentPath,
  ]);
  const spectral = run('Spectral (spectral:oas)', bin('spectral'), [
    'lint',
    '--ruleset',
    rulesetPath,
    '--fail-severity=warn',
    '--format=stylish',
    documentPath,
  ]);
  process.exitCode = redocly && spectral ? 0 : 1;
} finally {
  rmSync(directory, { recursive: true, force: true });
}
