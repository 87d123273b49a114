import { createLogger } from './infra/logger.js';
import { prettyLogDestination } from './infra/pretty-log.js';
import { ConfigError, loadConfig, type Config } from './infra/config.js';
import { beginEmbeddedEngine } from './infra/database/embedded-engine.js';
import { DataDirInUseError } from './infra/database/data-dir-lock.js';
import { ensureDevPlatformToken, type DevPlatformToken } from './infra/dev-platform-token.js';
import type { App } from './app/app.js';
import type { Logger } from 'pino';
import nodeModule from 'node:module';

// V8's code cache on disk: later starts skip compiling the service's modules (app.js, loaded below).
// Called only where it exists (Node 22.1+): a named import of it fails to link on Node 20, which `engines` allows.
nodeModule.enableCompileCache?.();

const DRAIN_TIMEOUT_MS = 10_000;

/** A reason not to start that is the operator's to fix: said in one line, without a stack. */
class StartupRefusal extends Error {}

const NO_PLATFORM_TOKEN =
  'INTERNAL_API_TOKEN is not set: nothing has platform access (provisioning, publishing, /metrics). ' +
  'To provision the first organization, restart with INTERNAL_API_TOKEN set to a secret of 16 or more characters ' +
  '(e.g. from `openssl rand -hex 24`), then, with the same value exported, run ' +
  '`npm run admin -- org create NAME`, `npm run admin -- user create --org ID --email EMAIL --role ADMIN` and ' +
  '`npm run admin -- key create --user ID --scopes READ,WRITE`.';

/**
 * The quick start's platform token: in embedded mode outside production, without INTERNAL_API_TOKEN,
 * the data dir's development token (made at its first start). Never on PostgreSQL or in production:
 * there a missing token means no platform access. Call with the data dir locked.
 */
function devPlatformToken(config: Config): DevPlatformToken | undefined {
  if (config.internalApiToken || config.database.kind !== 'embedded' || config.env === 'production') return undefined;
  return ensureDevPlatformToken(config.database.dataDir);
}

/**
 * A brand-new embedded database's demo data, seeded before listening so the banner's keys work at
 * once; demo data only ever goes into a brand-new embedded database, never into a real one.
 */
async function seedFreshDemo(config: Config, app: App) {
  if (config.database.kind !== 'embedded' || app.database.kind !== 'embedded' || !config.seedDemo || !app.database.freshEmbedded)
    return undefined;
  const { seedDemo } = await import('./app/demo-seed.js');
  return seedDemo(app.services.orm.em.fork(), config.limits.maxKeysPerUser);
}

/**
 * The embedded mode's start-up banner, once it listens on `port`; none on PostgreSQL. A reopened
 * data dir's demo is looked up only now: the banner needs it, serving does not.
 */
async function embeddedBanner(
  config: Config,
  app: App,
  port: number,
  seeded: Awaited<ReturnType<typeof seedFreshDemo>>,
  devToken?: DevPlatformToken,
) {
  if (config.database.kind !== 'embedded' || app.database.kind !== 'embedded') return undefined;
  const banners = await import('./app/demo-banner.js');
  const dataDir = config.database.dataDir;
  const api = banners.serviceUrl(config.host, port);
  let demoLines: string | undefined;
  if (seeded) demoLines = banners.seededDemoLines(seeded, { api, dataDir });
  else if (config.seedDemo && !app.database.freshEmbedded) {
    const { findSeededDemo } = await import('./app/demo-seed.js');
    const found = await findSeededDemo(app.services.orm.em.fork(), app.services.sql);
    if (found) demoLines = banners.reopenedDemoLines(found, { api, dataDir });
  }
  return banners.banner(
    [demoLines, devToken && banners.platformTokenLines(devToken), banners.whereToLook(api)].filter((part): part is string => !!part),
  );
}

function logReady(log: Logger, config: Config, app: App, port: number) {
  log.info(
    { port, host: config.host, database: app.database.kind, redis: Boolean(config.redisUrl), docs: '/docs', graphql: '/graphql' },
    'service ready',
  );
  if (!config.internalApiToken) log.warn(NO_PLATFORM_TOKEN);
}

/** Listens on HOST:PORT and answers the port (PORT=0: the one given); a port in use or forbidden is a refusal. */
async function listen(config: Config, app: App): Promise<number> {
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
  return typeof address === 'object' && address ? address.port : config.port;
}

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
  // pino maps its caller's stack through the source maps (util.getCallSites): run from a microtask, that
  // stack holds only the logger's small chunk, and main.js's map is not parsed at every start.
  const destination = config.logFormat === 'pretty' ? prettyLogDestination() : undefined;
  const log = await Promise.resolve().then(createLogger.bind(undefined, config.logLevel, destination));
  // The embedded engine starts first: PGlite has begun opening the data dir (its WebAssembly
  // compiling on V8's background threads, its files being read) before the service's modules load
  // (app.js is imported only now, and the build keeps it a separate chunk).
  const embeddedEngine = config.database.kind === 'embedded' ? (await beginEmbeddedEngine(config.database)).engine : undefined;
  const devToken = devPlatformToken(config);
  if (devToken) config = { ...config, internalApiToken: devToken.token };
  const { buildApp } = await import('./app/app.js');
  const app = await buildApp(config, log, { embeddedEngine });
  const seeded = await seedFreshDemo(config, app);

  const port = await listen(config, app);
  logReady(log, config, app, port);

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
  // After the start-up logs, as one block on stderr: it stays apart from the JSON log lines on stdout.
  // A drain begun meanwhile may close the database under the lookup: then there is no banner to print.
  const banner = await embeddedBanner(config, app, port, seeded, devToken).catch((error: unknown) => {
    if (closing) return undefined;
    throw error;
  });
  if (banner && !closing) process.stderr.write(banner);
}

main().catch((error) => {
  // A refusal is an operator's situation, not a bug: one line, no stack.
  console.error(error instanceof DataDirInUseError || error instanceof StartupRefusal ? error.message : error);
  process.exit(1);
});
