import { createHash } from 'node:crypto';
import { badInput } from './errors.js';
import { isInTimestampRange } from './timestamp-range.js';
import { isUuid } from './uuid.js';

/**
 * Keyset pages, newest first on (created_at desc, id desc), for every listing: its page size and
 * cursor checked here once, its cursors bound to the list they page (one caller's feed, one
 * organization's users…) so that a cursor of another list is refused.
 */

/** The position after the last row of a page. */
export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

/** How a listing names its two arguments and bounds its page size. */
export interface KeysetListing {
  size: { name: string; default: number; min: number; max: number };
  /** The cursor argument, and what the refusal of a foreign cursor calls the list (`listing`, `feed`). */
  cursor: { name: string; of: string };
}

/** The operators' listings (organizations, users, a user's keys): `first` rows per page `after` a cursor. */
export const LISTING_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;
export const OPERATORS_LISTING: KeysetListing = { size: { name: 'first', ...LISTING_PAGE_SIZE }, cursor: { name: 'after', of: 'listing' } };

/**
 * What every cursor looks like, for the published JSON Schemas: base64url (unpadded) of
 * `[millis,"uuid","tag"]`, 55 to 69 bytes of JSON, so 74 to 92 characters starting with `W`.
 */
export const KEYSET_CURSOR_PATTERN = '^W[A-Za-z0-9_-]{73,91}$';
export const KEYSET_CURSOR_DESCRIPTION =
  'An opaque token issued by the server (nextCursor of the previous page); only a cursor of this listing is accepted.';

const listTag = (list: string) => createHash('sha256').update(list).digest('base64url').slice(0, 10);

/** An opaque cursor: the position, tagged with the list it belongs to. */
export function encodeKeysetCursor(list: string, position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id, listTag(list)])).toString('base64url');
}

/** The detail's message for a cursor that is not one of the listing's, wherever it is checked. */
export const notACursorOf = (listing: KeysetListing) => `is not a cursor of this ${listing.cursor.of}`;

/** The position a cursor of `list` names; null for a malformed cursor or one of another list. */
function positionOf(list: string, cursor: string): KeysetPosition | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return null;
  const [millis, id, tag] = parsed as unknown[];
  // A position outside the stored range was never issued, and PostgreSQL would refuse to compare it.
  if (!Number.isSafeInteger(millis) || !isInTimestampRange(millis as number) || !isUuid(id) || tag !== listTag(list)) return null;
  return { createdAt: new Date(millis as number), id };
}

/** The page size asked for (the listing's default when absent), or 422 naming its argument. */
export function pageSize(listing: KeysetListing, value: number | null | undefined): number {
  const { name, min, max } = listing.size;
  const size = value ?? listing.size.default;
  if (!Number.isInteger(size) || size < min || size > max)
    throw badInput(`${name} must be an integer from ${min} to ${max}.`, [{ path: name, message: `must be between ${min} and ${max}` }]);
  return size;
}

/** The position a cursor of `list` names (null without a cursor), or 422 naming its argument. */
export function pageCursor(listing: KeysetListing, list: string, cursor: string | null | undefined): KeysetPosition | null {
  if (!cursor) return null;
  const position = positionOf(list, cursor);
  if (!position)
    throw badInput(`${listing.cursor.name} is malformed or belongs to another ${listing.cursor.of}.`, [
      { path: listing.cursor.name, message: notACursorOf(listing) },
    ]);
  return position;
}

/**
 * A page from up to `size + 1` rows (one more than the page, to tell whether another follows),
 * with the cursor after its last row. Rows inserted meanwhile sort before the cursor, so walking
 * every page returns each row that existed at the first call exactly once.
 */
export function keysetPage<T>(
  list: string,
  rows: T[],
  size: number,
  position: (row: T) => KeysetPosition,
): { nodes: T[]; nextCursor: string | null } {
  const nodes = rows.length > size ? rows.slice(0, size) : rows;
  const last = nodes[nodes.length - 1];
  return { nodes, nextCursor: rows.length > size && last ? encodeKeysetCursor(list, position(last)) : null };
}

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  nodes: T[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/** One page of an operators' listing: `select` is asked for `first + 1` rows after the cursor. */
export async function listingPage<T extends KeysetPosition>(
  list: string,
  args: PageArgs,
  select: (after: KeysetPosition | null, limit: number) => Promise<T[]>,
): Promise<Page<T>> {
  const size = pageSize(OPERATORS_LISTING, args.first);
  const after = pageCursor(OPERATORS_LISTING, list, args.after);
  return keysetPage(list, await select(after, size + 1), size, (row) => row);
}

/**
 * Lists in a fixed order by position (a job's items by index): cursors of `[position, tag]`, bound
 * to their list like the keyset cursors, checked by the listing's rules and wording.
 */
export function encodeIndexCursor(list: string, position: number): string {
  return Buffer.from(JSON.stringify([position, listTag(list)])).toString('base64url');
}

/** The position a cursor of `list` names (0 without a cursor), or 422 naming the listing's cursor argument. */
export function pageIndex(listing: KeysetListing, list: string, cursor: string | null | undefined): number {
  if (!cursor) return 0;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  const [position, tag] = Array.isArray(parsed) && parsed.length === 2 ? (parsed as unknown[]) : [];
  if (!Number.isSafeInteger(position) || (position as number) < 0 || tag !== listTag(list))
    throw badInput(`${listing.cursor.name} is malformed or belongs to another ${listing.cursor.of}.`, [
      { path: listing.cursor.name, message: notACursorOf(listing) },
    ]);
  return position as number;
}
