import type { DemoSeed, SeededDemo } from './demo-seed.js';

/**
 * The embedded mode's start-up banner: one block, written to stderr after the start-up logs, so it
 * stands apart from the JSON log lines on stdout. The first start prints the demo keys (the one
 * place a key is ever printed: demo data in an embedded database); later starts reprint the ids
 * and the keys' hints, since the keys themselves are stored hashed and cannot be shown again.
 */
interface Where {
  port: number;
  dataDir: string;
}

const rule = '─'.repeat(72);
const startOver = (dataDir: string) =>
  dataDir.startsWith('memory://')
    ? `The database is in memory: it ends with the process, and every start seeds it anew.`
    : `To start over with new keys: stop the server, delete the data dir (rm -rf ${dataDir}) and start again;\n` +
      `an empty data dir is seeded anew (new ids, new keys, the demo feed as new).`;

export function seededBanner(demo: DemoSeed, { port, dataDir }: Where): string {
  const api = `http://localhost:${port}`;
  return (
    `\n${rule}\nDemo data seeded into the embedded database in ${dataDir}.\n` +
    `  organization:   ${demo.organizationId}\n` +
    `  user:           ${demo.userId} (demo@example.com, ADMIN)\n` +
    `  gateway key:    ${demo.gatewayKey}   (READ, WRITE, ADMIN)\n` +
    `  skip trace key: ${demo.skipTraceKey}   (100 credits)\n` +
    `The keys are shown this once: they are stored hashed. Later starts print the ids and the keys' hints.\n` +
    `${startOver(dataDir)}\n` +
    `Try:\n` +
    `  curl -s -X POST ${api}/api/v1/call \\\n` +
    `    -H 'Authorization: Bearer ${demo.gatewayKey}' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"operationId":"getNotificationCounts","variables":{}}'\n` +
    `  curl -s -X POST ${api}/api/v1/skiptrace \\\n` +
    `    -H 'Authorization: Bearer ${demo.skipTraceKey}' -H 'Content-Type: application/json' \\\n` +
    `    -d '{"address":{"line1":"123 Main Street Apt 4","city":"Austin","state":"tx","zip":"78701"}}'\n` +
    `${rule}\n\n`
  );
}

export function reopenedBanner(demo: SeededDemo, { dataDir }: Where): string {
  const gatewayKeys = demo.gatewayKeyHints.length ? demo.gatewayKeyHints.join(', ') : 'none active';
  return (
    `\n${rule}\nDemo data in the embedded database in ${dataDir} (seeded at its first start).\n` +
    `  organization:   ${demo.organizationId}\n` +
    `  user:           ${demo.userId} (demo@example.com)\n` +
    `  gateway key:    ${gatewayKeys}\n` +
    `  skip trace key: ${demo.skipTraceKeyHint ?? 'none active'}\n` +
    `The keys were printed in full at the first start only: they are stored hashed, so only their hints show here.\n` +
    `${startOver(dataDir)}\n` +
    `${rule}\n\n`
  );
}
