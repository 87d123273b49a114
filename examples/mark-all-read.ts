/**
 * Marks every notification of the caller read (optionally of one type), in one call, then shows the
 * badge numbers. `markAllNotificationsRead` touches the rows that existed when the call began.
 *
 *   API_URL=http://localhost:4000 GATEWAY_KEY=gk_… npx tsx examples/mark-all-read.ts [notificationType]
 */
import { gatewayClient, optionsFromEnv } from './client/api-client.js';

const gateway = gatewayClient(optionsFromEnv('GATEWAY_KEY'));
const notificationTypeFilter = process.argv[2];

const marked = await gateway.callOperation('markAllNotificationsRead', {
  isSeen: true,
  notificationTypeFilter,
});
console.log(`marked ${marked.updatedCount} read`);
const counts = await gateway.callOperation('getNotificationCounts', { notificationTypeFilter });
console.log(`now ${counts.unreadCount} unread, ${counts.readCount} read`);
