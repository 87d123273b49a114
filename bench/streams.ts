/**
 * The `watch` scenario: `size.streams` watchNotifications streams open on one service instance (one
 * per user, through the gateway), then notifications published one at a time through the
 * platform's `publishNotifications`, each to a random one of those users: the time from sending
 * the publish to its event arriving on that user's stream (p50, p99), and the instance's RSS
 * before and with the streams open. The published rows (title `bench-stream-event`) stay: 300 per
 * full run among 1,000 users of a million-row feed.
 */
import { openStream, type SseStream } from '../test/support/sse-client.js';
import { log, median, prng, sleep } from './lib/common.js';
import { memoryOf, type Server } from './lib/servers.js';
import type { Fixture } from './scenarios.js';

export const STREAM_SCENARIO = 'watch';
/** The full run's size (the target is stated for 1,000 streams); --quick only keeps the harness working. */
export const FULL_STREAMS = { streams: 1000, publishes: 300 };
export const QUICK_STREAMS = { streams: 100, publishes: 30 };
const TITLE = 'bench-stream-event';

export interface StreamResult {
  streams: number;
  publishes: number;
  p50: number;
  p99: number;
  max: number;
  rssBeforeMiB: number;
  rssWithStreamsMiB: number;
  /** Events not received within 5 s. */
  missed: number;
}

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] : Number.NaN;

export async function measureStreams(
  service: Server,
  fixture: Fixture,
  platformToken: string,
  size: { streams: number; publishes: number } = FULL_STREAMS,
): Promise<StreamResult> {
  const users = fixture.typical.slice(0, size.streams);
  if (users.length < size.streams) throw new Error(`watch: the fixture has ${users.length} typical users, ${size.streams} needed`);
  const rssBefore = memoryOf(service.pid).rss;
  const streams: SseStream[] = [];
  try {
    for (let i = 0; i < users.length; i += 50) {
      // Settled one by one, so every stream that opened is kept for the `finally` to close.
      const settled = await Promise.allSettled(
        users.slice(i, i + 50).map((u) =>
          openStream(`${service.url}/api/v1/call`, {
            headers: { authorization: `Bearer ${u.key}`, accept: 'text/event-stream' },
            body: { operationId: 'watchNotifications', variables: {} },
          }),
        ),
      );
      const batch = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      streams.push(...batch);
      const failed = settled.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
      for (const stream of batch)
        if (stream.status !== 200) throw new Error(`watch: a stream was refused: ${stream.status} ${JSON.stringify(stream.body)}`);
    }
    await sleep(1000);
    const rssWith = memoryOf(service.pid).rss;
    log(`watch: ${streams.length} streams open; RSS ${rssBefore.toFixed(0)} → ${rssWith.toFixed(0)} MiB`);

    const random = prng(0x5eed);
    const latencies: number[] = [];
    let missed = 0;
    for (let n = 0; n < size.publishes; n++) {
      const i = Math.floor(random() * users.length);
      const from = streams[i].events.length;
      const sent = performance.now();
      const response = await fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${platformToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          query: 'mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }',
          variables: { input: [{ userId: users[i].userId, notificationType: 'deal_created', title: TITLE, body: `${n}` }] },
        }),
      });
      const published = (await response.json()) as { data?: { publishNotifications: Array<{ id: string }> } };
      const id = published.data?.publishNotifications[0]?.id;
      if (!id) throw new Error(`watch: publish failed: ${JSON.stringify(published)}`);
      try {
        await streams[i].next((d) => d.data?.notificationIds?.[0] === id, 5000, from);
        const event = streams[i].events.findLast((e) => e.event === 'next')!;
        latencies.push(event.at - sent);
      } catch (error) {
        missed++;
        log(`watch: publish ${n} (${id}) not received: ${(error as Error).message.slice(0, 300)}`);
      }
    }
    latencies.sort((x, y) => x - y);
    return {
      streams: streams.length,
      publishes: size.publishes,
      p50: median(latencies),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? Number.NaN,
      rssBeforeMiB: rssBefore,
      rssWithStreamsMiB: rssWith,
      missed,
    };
  } finally {
    for (const stream of streams) stream.close();
  }
}

export function renderStreams(result: StreamResult): string[] {
  const fmt = (n: number) => (n < 10 ? n.toFixed(1) : n.toFixed(0));
  return [
    `Streams (\`${STREAM_SCENARIO}\`): ${result.streams} watchNotifications streams open on one instance (one per user, through the gateway); ` +
      `${result.publishes} publishes, one at a time, each to a random one of those users: publish sent → event received p50 ${fmt(result.p50)} ms, ` +
      `p99 ${fmt(result.p99)} ms, max ${fmt(result.max)} ms, ${result.missed} missed (not within 5 s). ` +
      `Instance RSS ${fmt(result.rssBeforeMiB)} MiB before the streams, ${fmt(result.rssWithStreamsMiB)} MiB with them ` +
      `(≈ ${fmt(((result.rssWithStreamsMiB - result.rssBeforeMiB) * 1024) / result.streams)} KiB per stream). ` +
      `Contract: within 1 s — ${result.missed === 0 && result.max < 1000 ? '**met**' : '**not met**'}.`,
    '',
  ];
}
