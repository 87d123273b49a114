/**
 * Pages through the caller's whole feed, newest first, passing each page's `nextCursor` back as
 * `cursor` until it is null. Keyset pages never repeat or skip a row, even while the feed is being
 * written to.
 *
 *   API_URL=http://localhost:4000 GATEWAY_KEY=gk_… npx tsx examples/page-through-feed.ts
 */
import { gatewayClient, optionsFromEnv, type OperationData } from './client/api-client.js';

const gateway = gatewayClient(optionsFromEnv('GATEWAY_KEY'));
const limit = Number(process.env.PAGE_SIZE ?? 25);

let cursor: string | null = null;
let pages = 0;
let seen = 0;
do {
  const page: OperationData<'listNotifications'> = await gateway.callOperation('listNotifications', { limit, cursor });
  pages++;
  for (const notification of page.notifications) {
    seen++;
    console.log(`${notification.id} ${notification.createdAt} ${notification.isSeen ? 'read  ' : 'unread'} ${notification.title}`);
  }
  cursor = page.nextCursor;
  if (!cursor) console.log(`${seen} notifications in ${pages} pages (total ${page.total})`);
} while (cursor);
