/**
 * The `watch` scenario: `size.streams` watchNotifications streams open on one service instance (one
 * per user, through the gateway), then notifications published one at a time through the
 * platform's `publishNotifications`, each to a random one of those users: the time from sending
 * the publish to its event arriving on that user's stream (p50, p99), and the instance's RSS
 * before and with the streams open; then resumption (`measureResume`): reconnect with Last-Event-ID
 * → the missed event, p50 and p99. The published rows (title `bench-stream-event`) stay: 500 per
 * full run among 1,000 users of a million-row feed.
 */
import { openStream, type SseStream } from '../test/support/sse-client.js';
import { log, median, prng, sleep } from './lib/common.js';
import { memoryOf, type Server } from './lib/servers.js';
import type { Fixture } from './scenarios.js';

export const STREAM_SCENARIO = 'watch';
/** The full run's size (the target is stated for 1,000 streams); --quick only keeps the harness working. */
export const FULL_STREAMS = { streams: 1000, publishes: 300, resumes: 100 };
export const QUICK_STREAMS = { streams: 100, publishes: 30, resumes: 20 };
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
  /** Reconnecting with Last-Event-ID (the other streams still open) → the first missed event received. */
  resume: { samples: number; p50: number; p99: number; max: number; missed: number };
}

const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] : Number.NaN;

export async function measureStreams(
  service: Server,
  fixture: Fixture,
  platformToken: string,
  size: { streams: number; publishes: number; resumes: number } = FULL_STREAMS,
): Promise<StreamResult> {
  const users = fixture.typical.slice(0, size.streams);
  if (users.length < size.streams) throw new Error(`watch: the fixture has ${users.length} typical users, ${size.streams} needed`);
  const rssBefore = memoryOf(service.pid).rss;
  const streams: SseStream[] = [];
  try {
    for (let i = 0; i < users.length; i += 50) {
      // Settled one by one, so every stream that opened is kept for the `finally` to close.
      const settled = await Promise.allSettled(users.slice(i, i + 50).map((u) => openWatch(service, u)));
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
      const id = await publishTo(service, platformToken, users[i], `${n}`);
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
    const resume = await measureResume(service, platformToken, users, streams, size.resumes);
    return {
      resume,
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

type BenchUser = Fixture['typical'][number];

const openWatch = (service: Server, user: BenchUser, lastEventId?: string) =>
  openStream(`${service.url}/api/v1/call`, {
    headers: { authorization: `Bearer ${user.key}`, accept: 'text/event-stream', ...(lastEventId && { 'last-event-id': lastEventId }) },
    body: { operationId: 'watchNotifications', variables: {} },
  });

async function publishTo(service: Server, platformToken: string, user: BenchUser, body: string): Promise<string> {
  const response = await fetch(`${service.url}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${platformToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      query: 'mutation($input: [PublishNotificationInput!]!) { publishNotifications(input: $input) { id } }',
      variables: { input: [{ userId: user.userId, notificationType: 'deal_created', title: TITLE, body }] },
    }),
  });
  const published = (await response.json()) as { data?: { publishNotifications: Array<{ id: string }> } };
  const id = published.data?.publishNotifications[0]?.id;
  if (!id) throw new Error(`watch: publish failed: ${JSON.stringify(published)}`);
  return id;
}

/**
 * Resumption with every other stream open: a user's stream sees an event, its client leaves, one
 * more event is published, and the client reconnects with the first event's id as Last-Event-ID;
 * the time from sending the reconnect to the missed event arriving. The new stream replaces the old.
 */
async function measureResume(service: Server, platformToken: string, users: BenchUser[], streams: SseStream[], samples: number) {
  const random = prng(0x7e5e);
  const latencies: number[] = [];
  let missed = 0;
  for (let n = 0; n < samples; n++) {
    const i = Math.floor(random() * users.length);
    const from = streams[i].events.length;
    const seen = await publishTo(service, platformToken, users[i], `resume-seen ${n}`);
    await streams[i].next((d) => d.data?.notificationIds?.[0] === seen, 5000, from);
    const lastEventId = streams[i].events.findLast((e) => e.event === 'next')!.id;
    // A service without SSE ids (a --baseline from before them) has nothing to resume from.
    if (!lastEventId) {
      missed++;
      continue;
    }
    streams[i].close();
    const lost = await publishTo(service, platformToken, users[i], `resume-missed ${n}`);
    const sent = performance.now();
    streams[i] = await openWatch(service, users[i], lastEventId);
    try {
      await streams[i].next((d) => d.data?.notificationIds?.[0] === lost, 5000);
      latencies.push(streams[i].events.find((e) => e.event === 'next')!.at - sent);
    } catch (error) {
      missed++;
      log(`watch: resume ${n} did not replay ${lost}: ${(error as Error).message.slice(0, 300)}`);
    }
  }
  latencies.sort((x, y) => x - y);
  return { samples, p50: median(latencies), p99: percentile(latencies, 99), max: latencies.at(-1) ?? Number.NaN, missed };
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
    `Resume: ${result.resume.samples} reconnects with Last-Event-ID, the other ${result.streams - 1} streams open (each after one missed event): ` +
      `reconnect sent → missed event received p50 ${fmt(result.resume.p50)} ms, p99 ${fmt(result.resume.p99)} ms, max ${fmt(result.resume.max)} ms, ` +
      `${result.resume.missed} not replayed within 5 s.`,
    '',
  ];
}
