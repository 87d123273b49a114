import { createLogger } from './infra/logger.js';
import { ConfigError, loadConfig } from './infra/config.js';
import { startEmbeddedEngine } from './infra/database/embedded-engine.js';
import { DataDirInUseError } from './infra/database/data-dir-lock.js';
import type { DemoSeed } from './server/demo-seed.js';

const DRAIN_TIMEOUT_MS = 10_000;

/** A reason not to start that is the operator's to fix: said in one line, without a stack. */
class StartupRefusal extends Error {}

async function main() {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  // The embedded engine starts first, so its WebAssembly compiles while the service's modules
  // load (app.js is imported only now, and the build keeps it a separate chunk).
  const embeddedEngine = config.database.kind === 'embedded' ? startEmbeddedEngine(config.database) : undefined;
  embeddedEngine?.catch(() => undefined); // awaited (and reported) by buildApp; not an unhandled rejection meanwhile
  const { buildApp } = await import('./server/app.js');
  const app = await buildApp(config, log, { embeddedEngine });

  let demo: DemoSeed | null = null;
  // Demo data only ever goes into a brand-new embedded database, never into a real one.
  if (config.seedDemo && app.database.kind === 'embedded' && app.database.freshEmbedded) {
    const { seedDemo } = await import('./server/demo-seed.js');
    demo = await seedDemo(app.services.orm.em.fork());
  }

  try {
    await app.http.listen({ port: config.port, host: config.host });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw error;
    // Releases the database (and an embedded data dir's lock) before saying why.
    await app.close().catch(() => undefined);
    throw new StartupRefusal(
      code === 'EADDRINUSE'
        ? `Port ${config.port} on ${config.host} is already in use: stop the process that holds it, or set PORT to another port.`
        : `No permission to listen on port ${config.port} on ${config.host}: set PORT to a port above 1023.`,
    );
  }
  const address = app.http.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log.info({ port, database: app.database.kind, redis: Boolean(config.redisUrl) }, 'service ready');
  if (demo) {
    // The one place a key is ever printed: demo data in an embedded database (README, Quick start).
    process.stdout.write(
      `\nDemo data seeded. These keys are shown once:\n` +
        `  gateway key:    ${demo.gatewayKey}\n` +
        `  skip trace key: ${demo.skipTraceKey}\n` +
        `Try:\n  curl -s -X POST http://localhost:${port}/api/v1/call \\\n` +
        `    -H 'Authorization: Bearer ${demo.gatewayKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"operationId":"getNotificationCounts","variables":{}}'\n` +
        `  curl -s -X POST http://localhost:${port}/api/v1/skiptrace \\\n` +
        `    -H 'Authorization: Bearer ${demo.skipTraceKey}' -H 'Content-Type: application/json' \\\n` +
        `    -d '{"address":{"line1":"123 Main Street Apt 4","city":"Austin","state":"tx","zip":"78701"}}'\n\n`,
    );
  }

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'draining');
    const timer = setTimeout(() => {
      log.error('drain timed out; exiting');
      process.exit(1);
    }, DRAIN_TIMEOUT_MS).unref();
    app.close().then(
      () => {
        clearTimeout(timer);
        process.exit(0);
      },
      (error) => {
        log.error({ err: error }, 'error while closing');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error) => {
  // A refusal is an operator's situation, not a bug: one line, no stack.
  console.error(error instanceof DataDirInUseError || error instanceof StartupRefusal ? error.message : error);
  process.exit(1);
});
