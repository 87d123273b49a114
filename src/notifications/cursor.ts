import { createHash } from 'node:crypto';
import { isInTimestampRange } from '../common/timestamp-range.js';
import { isUuid } from '../common/uuid.js';
import { badInput } from '../common/errors.js';

/** The position after the last row of a page: keyset pagination on (created_at desc, id desc). */
export interface FeedPosition {
  createdAt: Date;
  id: string;
}

/** Binds a cursor to its feed's owner, so a cursor from another caller's feed is refused. */
const ownerTag = (userId: string) => createHash('sha256').update(userId).digest('base64url').slice(0, 10);

export function encodeCursor(userId: string, position: FeedPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id, ownerTag(userId)])).toString('base64url');
}

export function decodeCursor(userId: string, cursor: string): FeedPosition {
  const refuse = () =>
    badInput('cursor is malformed or belongs to another feed.', [{ path: 'cursor', message: 'is not a cursor of this feed' }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) throw refuse();
  const [millis, id, tag] = parsed as unknown[];
  // A position outside the stored range was never issued, and PostgreSQL would refuse to compare
  // it (a valid JavaScript Date reaches ±8.64e15 ms, far past timestamptz).
  if (!Number.isSafeInteger(millis) || !isInTimestampRange(millis as number) || !isUuid(id) || tag !== ownerTag(userId)) throw refuse();
  return { createdAt: new Date(millis as number), id };
}
