/**
 * Notification streams against an attacker with ordinary keys, on the bundle run exactly as
 * `npm start` runs it (heap caps included): an ADMIN key's many keys of one user, streams that
 * never read, and marks of 500 ids as fast as the key's window allows. The process must stay
 * within its memory, keep another organization's latency, and still drain on SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { openStalledStream, openStream, type StalledStream } from '../support/sse-client.js';
import { graphql, json, platformToken, requireRealBackends, spawnService, type ServiceProcess } from './spawn-service.js';

requireRealBackends();
const services: ServiceProcess[] = [];
const sockets: StalledStream[] = [];
afterAll(async () => {
  for (const stream of sockets) stream.socket.destroy();
  await Promise.all(services.map((service) => service.stop()));
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const rssMiB = (service: ServiceProcess) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${service.child.pid}/status`, 'utf8'))![1]) / 1024;

/** A user of a new organization (role ADMIN) with one key of `scopes`, and `feed` notifications. */
async function tenant(service: ServiceProcess, scopes: string, feed = 0) {
  const org = await graphql(
    service,
    `
      mutation ($n: String!) {
        createOrganization(name: $n) {
          id
        }
      }
    `,
    { n: `Streams ${randomUUID()}` },
  );
  const user = await graphql(
    service,
    `
      mutation ($o: ID!, $e: String!) {
        createUser(organizationId: $o, email: $e, role: ADMIN) {
          id
        }
      }
    `,
    {
      o: org.body.data.createOrganization.id,
      e: `${randomUUID()}@example.com`,
    },
  );
  const userId = user.body.data.createUser.id as string;
  const key = await graphql(service, `mutation($u: ID!) { createApiKey(userId: $u, scopes: [${scopes}]) { secret } }`, { u: userId });
  let ids: string[] = [];
  if (feed) {
    const published = await graphql(
      service,
      `
        mutation ($i: [PublishNotificationInput!]!) {
          publishNotifications(input: $i) {
            id
          }
        }
      `,
      {
        i: Array.from({ length: feed }, (_, n) => ({ userId, notificationType: 'deal_created', title: `Row ${n}`, body: 'x'.repeat(40) })),
      },
    );
    ids = published.body.data.publishNotifications.map((row: { id: string }) => row.id);
  }
  return { userId, key: key.body.data.createApiKey.secret as string, ids };
}

/** Keys the ADMIN key issues for its own user. */
async function mintKeys(service: ServiceProcess, adminKey: string, userId: string, count: number) {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await graphql(
      service,
      `
        mutation ($u: ID!) {
          createApiKey(userId: $u, scopes: [READ]) {
            secret
          }
        }
      `,
      { u: userId },
      adminKey,
    );
    keys.push(created.body.data.createApiKey.secret);
  }
  return keys;
}

const stalled = (service: ServiceProcess, key: string, route: 'gateway' | 'graphql' = 'gateway') =>
  openStalledStream(
    route === 'gateway' ? `${service.url}/api/v1/call` : `${service.url}/graphql`,
    route === 'gateway'
      ? { headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' }, body: { operationId: 'watchNotifications' } }
      : {
          headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
          body: { query: 'subscription { notificationEvents { kind notificationIds counts { unreadCount } } }' },
        },
  ).then((stream) => (sockets.push(stream), stream));

const mark = (service: ServiceProcess, key: string, ids: string[], isSeen: boolean) =>
  json(`${service.url}/api/v1/call`, {
    bearer: key,
    body: JSON.stringify({ operationId: 'markNotificationsRead', variables: { notificationIds: ids, isSeen } }),
  });

/** Median of `times`. */
const median = (times: number[]) => [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)];

describe('streams under attack', () => {
  it('an ADMIN key with 10 keys, 50 streams that never read and marks of 500 ids at 15/s for 20 s: memory bounded, others unaffected', async () => {
    const service = await spawnService({});
    services.push(service);
    const attacker = await tenant(service, 'READ, WRITE, ADMIN', 500);
    const keys = await mintKeys(service, attacker.key, attacker.userId, 10);
    const bystander = await tenant(service, 'READ, WRITE', 5);
    const counts = async () => {
      const started = performance.now();
      const result = await json(`${service.url}/api/v1/call`, {
        bearer: bystander.key,
        body: JSON.stringify({ operationId: 'getNotificationCounts' }),
      });
      expect(result.status).toBe(200);
      return performance.now() - started;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 40; i++) baseline.push(await counts());

    // 5 streams per key: the user's limit (10) admits the first 10, the rest are 429.
    const opened = await Promise.all(keys.flatMap((key) => Array.from({ length: 5 }, () => stalled(service, key))));
    const statuses = opened.map((stream) => stream.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40);
    const watcher = await openStream(`${service.url}/api/v1/call`, {
      headers: { authorization: `Bearer ${bystander.key}`, accept: 'text/event-stream' },
      body: { operationId: 'watchNotifications' },
    });

    const rssBefore = rssMiB(service);
    let peakRss = rssBefore;
    const during: number[] = [];
    const deadline = performance.now() + 20_000;
    let marks = 0;
    const attack = (async () => {
      for (let seen = true; performance.now() < deadline; seen = !seen) {
        const started = performance.now();
        expect((await mark(service, attacker.key, attacker.ids, seen)).status).toBe(200);
        marks++;
        // Streams cut off for falling behind are opened again, as a stubborn attacker would.
        if (marks % 30 === 0) await Promise.all(keys.slice(0, 5).map((key) => stalled(service, key)));
        await sleep(Math.max(0, 1000 / 15 - (performance.now() - started)));
      }
    })();
    const observe = (async () => {
      while (performance.now() < deadline) {
        peakRss = Math.max(peakRss, rssMiB(service));
        during.push(await counts());
        await sleep(100);
      }
    })();
    await Promise.all([attack, observe]);

    // A bystander's reading stream still gets its events.
    const [id] = (
      await graphql(
        service,
        `
          mutation ($i: [PublishNotificationInput!]!) {
            publishNotifications(input: $i) {
              id
            }
          }
        `,
        {
          i: [{ userId: bystander.userId, notificationType: 'deal_created', title: 'after', body: 'b' }],
        },
      )
    ).body.data.publishNotifications.map((row: { id: string }) => row.id);
    expect((await watcher.next((d) => d.data.notificationIds[0] === id, 2000)).data.kind).toBe('created');
    watcher.close();

    expect(service.child.exitCode).toBeNull();
    console.log(
      `marks ${marks}, RSS ${rssBefore.toFixed(0)} MiB before, peak ${peakRss.toFixed(0)} MiB, bystander p50 ${median(baseline).toFixed(1)} ms before, ${median(during).toFixed(1)} ms during`,
    );
    expect(marks).toBeGreaterThan(200);
    expect(peakRss).toBeLessThan(300);
    expect(median(during)).toBeLessThan(3 * median(baseline) + 5);
  }, 120_000);

  it('SIGTERM drains within its usual time while stream clients on both routes read nothing (exit 0)', async () => {
    const service = await spawnService({ GATEWAY_RATE_LIMIT_PER_MIN: '100000' });
    services.push(service);
    const victim = await tenant(service, 'READ, WRITE, ADMIN', 500);
    const [secondKey] = await mintKeys(service, victim.key, victim.userId, 1);
    const streams = [
      ...(await Promise.all(Array.from({ length: 5 }, () => stalled(service, victim.key)))),
      ...(await Promise.all(Array.from({ length: 5 }, () => stalled(service, secondKey, 'graphql')))),
    ];
    expect(streams.map((stream) => stream.status)).toEqual(Array(10).fill(200));
    // Events of 500 ids (about 20 KB) until the first stream is cut off for falling 256 KiB behind
    // (after the 4 MB or so a loopback connection absorbs): the others are then stalled too, with
    // bytes waiting in the process that their clients will never take.
    const openStreams = async () => {
      const metrics = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${platformToken}` } });
      return Number(/^crm_sse_open_streams (\d+)$/m.exec(await metrics.text())![1]);
    };
    for (let i = 0; i < 600 && (await openStreams()) === 10; i++) await mark(service, victim.key, victim.ids, i % 2 === 0);
    const stalledOpen = await openStreams();
    expect(stalledOpen).toBeGreaterThan(0);
    const stopped = performance.now();
    const code = await service.stop('SIGTERM');
    const drained = performance.now() - stopped;
    console.log(`SIGTERM to exit with ${stalledOpen} stalled streams open: ${drained.toFixed(0)} ms`);
    expect(code).toBe(0);
    expect(drained).toBeLessThan(5000);
    for (const stream of streams) stream.resume();
    await Promise.all(streams.map((stream) => stream.closed));
  }, 120_000);
});
