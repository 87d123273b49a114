import { encodeKeysetCursor, notACursorOf, type KeysetListing, type KeysetPosition } from '../common/keyset-page.js';

/** The feed's pages: `limit` rows `cursor` on, its cursors bound to the feed's owner (the list is the user's id). */
export const FEED_LISTING: KeysetListing = {
  size: { name: 'limit', default: 25, min: 1, max: 50 },
  cursor: { name: 'cursor', of: 'feed' },
};

/** The detail's message for a cursor that is not one of the caller's feed, wherever it is checked. */
export const NOT_A_FEED_CURSOR = notACursorOf(FEED_LISTING);

/** A cursor of `userId`'s feed after `position` (bench scenarios build them too). */
export const encodeCursor = (userId: string, position: KeysetPosition): string => encodeKeysetCursor(userId, position);
