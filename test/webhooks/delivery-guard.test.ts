/**
 * The address is checked again at every delivery, after name resolution, without
 * SKIPTRACE_WEBHOOK_ALLOW_PRIVATE: a name that resolved to a public address when the webhook was
 * accepted and resolves to 127.0.0.1 when it is sent (DNS rebinding) is refused then, and no
 * connection is made; so are loopback, private and metadata URLs that reached the queue. A refused
 * delivery is retried like any failure, at most 8 attempts in all. The resolver is the test's.
 */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, MAX_WEBHOOK_ATTEMPTS, type Resolve } from '../../src/webhooks/index.js';
import { startService, type TestService } from '../support/harness.js';
import { eventually } from '../support/webhook-receiver.js';
import { deliveryRow, enqueue, organizationWithKey, ownDatabase, rotateSecret, type OwnDatabase } from '../support/webhooks.js';

const RETRY_BASE_MS = 20;

/** What the test's resolver answers, by name; changed by the tests as DNS would change. */
const zone = new Map<string, string[]>();
const resolve: Resolve = async (hostname) => {
  const found = zone.get(hostname);
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return found;
};

let database: OwnDatabase;
let service: TestService;
/** A loopback listener that counts the connections made to it: a refused delivery makes none. */
let listener: Server;
let connections = 0;
let port: number;

beforeAll(async () => {
  listener = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((done) => listener.listen(0, '127.0.0.1', done));
  port = (listener.address() as AddressInfo).port;
  database = await ownDatabase();
  service = await startService(
    { ...database.env, WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS), WEBHOOK_POLL_INTERVAL_MS: '30' },
    { app: { webhookResolve: resolve } },
  );
});
afterAll(async () => {
  await service?.close();
  await database?.drop();
  await new Promise((done) => listener?.close(done));
});

/** The delivery once its attempts are over: out of attempts, nothing scheduled, no claim. */
const finished = (subjectId: string) =>
  eventually(
    () => deliveryRow(service, subjectId),
    (row) => row.attempts === MAX_WEBHOOK_ATTEMPTS && row.next_attempt_at === null && row.lease_token === null,
  );

describe('a webhook URL checked again at every delivery', () => {
  it('refuses a name rebound to 127.0.0.1 after it was accepted, connects nowhere, and gives up after 8 attempts', async () => {
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const url = `https://rebind.example:${port}/hooks`;
    zone.set('rebind.example', ['93.184.216.34']);
    // Accepted when the job is created: the name resolves to a public address.
    await expect(checkWebhookUrl(url, { allowPrivate: false, resolve })).resolves.toBe(url);
    // Then the name is made to point at the service's own host.
    zone.set('rebind.example', ['127.0.0.1']);
    const subjectId = await enqueue(service, org.organizationId, url);

    const row = await finished(subjectId);
    expect(row.last_status).toBeNull();
    expect(row.delivered_at).toBeNull();
    expect(row.last_error).toMatch(/^refused: .*127\.0\.0\.1/);
    expect(connections).toBe(0);
    // Nothing more once the attempts are spent.
    await new Promise((done) => setTimeout(done, 200));
    expect((await deliveryRow(service, subjectId)).attempts).toBe(MAX_WEBHOOK_ATTEMPTS);
  });

  it.each([
    ['the metadata service', () => `https://169.254.169.254:${port}/latest/meta-data/`],
    ['loopback over http', () => `http://127.0.0.1:${port}/hooks`],
    ['loopback over https', () => `https://127.0.0.1:${port}/hooks`],
    ['a name with one private address among public ones', () => `https://mixed.example:${port}/hooks`],
  ])('refuses %s at delivery, making no connection', async (_what, url) => {
    zone.set('mixed.example', ['93.184.216.34', '10.0.0.7']);
    const org = await organizationWithKey(service);
    await rotateSecret(service, org.key);
    const subjectId = await enqueue(service, org.organizationId, url());
    const row = await finished(subjectId);
    expect(row.last_error).toMatch(/^refused: /);
    expect(row.delivered_at).toBeNull();
    expect(connections).toBe(0);
  });
});
