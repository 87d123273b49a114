/**
 * Marks every notification of the caller read (optionally of one type), in one call, then shows the
 * badge numbers. `markAllNotificationsRead` touches the rows that existed when the call began.
 *
 *   API_URL=http://localhost:4000 GATEWAY_KEY=gk_… npx tsx examples/mark-all-read.ts [notificationType]
 */
import { gatewayClient, optionsFromEnv } from './client/api-client.js';

const gateway = gatewayClient(optionsFromEnv('GATEWAY_KEY'));
const notificationTypeFilter = process.argv[2];

// PENDING: markAllNotificationsRead is being added on another branch. Once it is merged and
// `npm run codegen` has run, this directive is unused and tsc fails here: delete it and the
// annotation of `marked` (the generated types then give it).
// @ts-expect-error markAllNotificationsRead is not yet a published operation on this branch.
const marked: { updatedCount: number } = await gateway.callOperation('markAllNotificationsRead', {
  isSeen: true,
  notificationTypeFilter,
});
console.log(`marked ${marked.updatedCount} read`);
const counts = await gateway.callOperation('getNotificationCounts', { notificationTypeFilter });
console.log(`now ${counts.unreadCount} unread, ${counts.readCount} read`);
