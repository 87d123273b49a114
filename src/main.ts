import { createLogger } from './infra/logger.js';
import { ConfigError, loadConfig } from './infra/config.js';
import { beginEmbeddedEngine } from './infra/database/embedded-engine.js';
import { DataDirInUseError } from './infra/database/data-dir-lock.js';

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
  // The embedded engine starts first: PGlite has begun opening the data dir (its WebAssembly
  // compiling on V8's background threads, its files being read) before the service's modules load
  // (app.js is imported only now, and the build keeps it a separate chunk).
  const embeddedEngine = config.database.kind === 'embedded' ? (await beginEmbeddedEngine(config.database)).engine : undefined;
  const { buildApp } = await import('./server/app.js');
  const app = await buildApp(config, log, { embeddedEngine });

  // The embedded mode's demo banner, written once the port is known.
  let bannerFor: ((port: number) => string) | undefined;
  // Demo data only ever goes into a brand-new embedded database, never into a real one.
  if (config.seedDemo && config.database.kind === 'embedded' && app.database.kind === 'embedded') {
    const { seedDemo, findSeededDemo } = await import('./server/demo-seed.js');
    const { seededBanner, reopenedBanner } = await import('./server/demo-banner.js');
    const dataDir = config.database.dataDir;
    if (app.database.freshEmbedded) {
      const demo = await seedDemo(app.services.orm.em.fork(), config.limits.maxKeysPerUser);
      bannerFor = (port) => seededBanner(demo, { port, dataDir });
    } else {
      const found = await findSeededDemo(app.services.orm.em.fork(), app.services.sql);
      if (found) bannerFor = (port) => reopenedBanner(found, { port, dataDir });
    }
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
        ? `Port ${config.port} on ${config.host} is already in use: stop the process that holds it, or set PORT to another port (e.g. PORT=${config.port + 1} npm start).`
        : `No permission to listen on port ${config.port} on ${config.host}: set PORT to a port above 1023.`,
    );
  }
  const address = app.http.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log.info({ port, database: app.database.kind, redis: Boolean(config.redisUrl) }, 'service ready');
  // After the start-up logs, as one block on stderr: it stays apart from the JSON log lines on stdout.
  if (bannerFor) process.stderr.write(bannerFor(port));

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
