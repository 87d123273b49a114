/**
 * Polls the badge numbers (`getNotificationCounts`, one cheap query) and lists the unread
 * notifications only when the unread count has gone up: the polling pattern the feed is built for.
 *
 *   API_URL=http://localhost:4000 GATEWAY_KEY=gk_… npx tsx examples/poll-counts-then-list.ts
 *
 * POLL_ROUNDS (default 3) rounds, POLL_INTERVAL_MS (default 5000) apart.
 */
import { gatewayClient, optionsFromEnv } from './client/api-client.js';

const gateway = gatewayClient(optionsFromEnv('GATEWAY_KEY'));
const rounds = Number(process.env.POLL_ROUNDS ?? 3);
const intervalMs = Number(process.env.POLL_INTERVAL_MS ?? 5000);

let lastUnread = 0;
for (let round = 1; round <= rounds; round++) {
  const counts = await gateway.callOperation('getNotificationCounts');
  console.log(`round ${round}: ${counts.unreadCount} unread, ${counts.readCount} read`);
  if (counts.unreadCount > lastUnread) {
    // Only now is the feed worth a query: the newest unread first.
    const unread = await gateway.callOperation('listNotifications', { seen: false, limit: 10 });
    for (const notification of unread.notifications) console.log(`  unread: ${notification.title}`);
  }
  lastUnread = counts.unreadCount;
  if (round < rounds) await new Promise((resolve) => setTimeout(resolve, intervalMs));
}
