import type { DevPlatformToken } from '../infra/dev-platform-token.js';
import type { DemoSeed, SeededDemo } from './demo-seed.js';
import { SERVICE_INDEX } from '../reference/service-index.routes.js';

/**
 * The embedded mode's start-up banner, on stderr apart from the JSON logs. The first start prints
 * the demo keys (the one place a key is ever printed); later starts only their hints, as keys are stored hashed.
 */
interface Where {
  /** The service's base URL, e.g. http://localhost:4000. */
  api: string;
  dataDir: string;
}

const rule = '─'.repeat(72);
const startOver = (dataDir: string) =>
  dataDir.startsWith('memory://')
    ? `The database is in memory: it ends with the process, and every start seeds it anew.`
    : `To start over with new keys: stop the server, delete the data dir (rm -rf ${dataDir}) and start again;\n` +
      `an empty data dir is seeded anew (new ids, new keys, the demo feed as new).`;

/** The block: its parts, between two rules. */
export function banner(parts: readonly string[]): string {
  return `\n${rule}\n${parts.join('\n')}${rule}\n\n`;
}

/** The URL a person on this machine opens: loopback for an address that means every interface. */
export function serviceUrl(host: string, port: number): string {
  const local = ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost'].includes(host);
  return `http://${local ? 'localhost' : host.includes(':') ? `[${host}]` : host}:${port}`;
}

export function whereToLook(api: string): string {
  return (
    `API reference:    ${api}${SERVICE_INDEX.docs}\n` +
    `GraphiQL:         ${api}${SERVICE_INDEX.graphql}   (put a key in its Headers tab)\n` +
    `OpenAPI document: ${api}${SERVICE_INDEX.openapi}\n`
  );
}

/** The development platform token: in full when this start made it (or it lives in memory), else where it is kept. */
export function platformTokenLines({ token, path, created }: DevPlatformToken): string {
  if (created)
    return (
      `Development platform token${path ? ` (kept in ${path}, readable by you only)` : ' (in memory: a new one at each start)'}.\n` +
      `For the admin CLI (npm run admin -- --help), in the shell you run it from:\n` +
      `  export INTERNAL_API_TOKEN=${token}\n`
    );
  return (
    `Development platform token: in ${path} (printed in full at its first start only).\n` +
    `For the admin CLI, in the shell you run it from:\n` +
    `  export INTERNAL_API_TOKEN=$(cat ${path})\n`
  );
}

export function seededDemoLines(demo: DemoSeed, { api, dataDir }: Where): string {
  return (
    `Demo data seeded into the embedded database in ${dataDir}.\n` +
    `  organization:   ${demo.organizationId}\n` +
    `  user:           ${demo.userId} (demo@example.com, ADMIN)\n` +
    `  gateway key:    ${demo.gatewayKey}   (READ, WRITE, ADMIN)\n` +
    `  skip trace key: ${demo.skipTraceKey}   (100 credits)\n` +
    `The keys are shown this once: they are stored hashed. Later starts print the ids and the keys' hints.\n` +
    `For the README's examples, in the shell you run them from:\n` +
    `  export API_URL=${api} GATEWAY_KEY=${demo.gatewayKey} SKIPTRACE_KEY=${demo.skipTraceKey}\n` +
    `${startOver(dataDir)}\n` +
    `Try:\n` +
    `  curl -s -X POST ${api}/api/v1/call \\\n` +
    `    -H 'Authorization: Bearer ${demo.gatewayKey}' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"operationId":"getNotificationCounts","variables":{}}'\n` +
    `  curl -s -X POST ${api}/api/v1/skiptrace \\\n` +
    `    -H 'Authorization: Bearer ${demo.skipTraceKey}' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"address":{"line1":"123 Main Street Apt 4","city":"Austin","state":"tx","zip":"78701"}}'\n`
  );
}

export function reopenedDemoLines(demo: SeededDemo, { dataDir }: Where): string {
  const gatewayKeys = demo.gatewayKeyHints.length ? demo.gatewayKeyHints.join(', ') : 'none active';
  return (
    `Demo data in the embedded database in ${dataDir} (seeded at its first start).\n` +
    `  organization:   ${demo.organizationId}\n` +
    `  user:           ${demo.userId} (demo@example.com)\n` +
    `  gateway key:    ${gatewayKeys}\n` +
    `  skip trace key: ${demo.skipTraceKeyHint ?? 'none active'}\n` +
    `The keys were printed in full at the first start only: they are stored hashed, so only their hints show here.\n` +
    `${startOver(dataDir)}\n`
  );
}
