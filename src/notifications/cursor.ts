import { badInput } from '../common/errors.js';
import { decodeKeysetCursor, encodeKeysetCursor, type KeysetPosition } from '../common/keyset-cursor.js';

/** The detail's message for a cursor that is not one of the caller's feed, wherever it is checked. */
export const NOT_A_FEED_CURSOR = 'is not a cursor of this feed';

/** The position after the last row of a feed page. */
export type FeedPosition = KeysetPosition;

/** A feed's cursors are bound to its owner, so a cursor from another caller's feed is refused. */
export function encodeCursor(userId: string, position: FeedPosition): string {
  return encodeKeysetCursor(userId, position);
}

export function decodeCursor(userId: string, cursor: string): FeedPosition {
  const position = decodeKeysetCursor(userId, cursor);
  if (!position) throw badInput('cursor is malformed or belongs to another feed.', [{ path: 'cursor', message: NOT_A_FEED_CURSOR }]);
  return position;
}
