/**
 * Watches the caller's feed (`watchNotifications`, Server-Sent Events) and prints each change as it
 * happens: `created <id> <title>` for a new notification, `updated <n> ids, <unread> unread` for a
 * mark (no ids listed: a bulk change, re-read the first page).
 *
 *   API_URL=http://localhost:4000 GATEWAY_KEY=gk_… npx tsx examples/watch-notifications.ts [notificationType]
 *
 * Stops after WATCH_EVENTS events (default: never) or on Ctrl-C (SIGINT).
 *
 * Reconnecting: each event has an SSE id; a client that reopens the stream within 5 minutes with the
 * last id it received as the Last-Event-ID header first gets what it missed (or one `reset` event:
 * re-read). This example keeps no id: after a stream ended (`complete`) or its connection dropped,
 * reopen it after a short random delay, read `getNotificationCounts` (and the first page of
 * `listNotifications`) once, and go on from the events. After `invalid_key` (the key was revoked),
 * don't reconnect.
 */
import { gatewayClient, optionsFromEnv } from './client/api-client.js';

const gateway = gatewayClient(optionsFromEnv('GATEWAY_KEY'));
const notificationTypeFilter = process.argv[2];
const maxEvents = process.env.WATCH_EVENTS ? Number(process.env.WATCH_EVENTS) : Infinity;

const stop = new AbortController();
process.once('SIGINT', () => stop.abort());

const events = await gateway.watch('watchNotifications', { notificationTypeFilter }, { signal: stop.signal });
console.log('watching…');
let received = 0;
for await (const event of events) {
  if (event.notification) console.log(`created ${event.notification.id} ${event.notification.title}`);
  else console.log(`updated ${event.notificationIds.length} ids, ${event.counts.unreadCount} unread`);
  if (++received >= maxEvents) break;
}
