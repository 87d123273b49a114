import { hash } from 'node:crypto';
import { badInput } from './errors.js';
import { isInTimestampRange } from './timestamp-range.js';
import { isUuid } from './uuid.js';

/** Keyset pages on (created_at desc, id desc). Cursors are tagged with their list so another list's cursor is refused. */

export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

export interface KeysetListing {
  size: { name: string; default: number; min: number; max: number };
  /** `of` is what a foreign cursor's refusal calls the list (`listing`, `feed`). */
  cursor: { name: string; of: string };
}

export const LISTING_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;
export const OPERATORS_LISTING: KeysetListing = { size: { name: 'first', ...LISTING_PAGE_SIZE }, cursor: { name: 'after', of: 'listing' } };

/** For the published JSON Schemas: unpadded base64url of `[millis,"uuid","tag"]`, hence the `W` and the length range. */
export const KEYSET_CURSOR_PATTERN = '^W[A-Za-z0-9_-]{73,91}$';
export const KEYSET_CURSOR_DESCRIPTION =
  'An opaque token issued by the server (nextCursor of the previous page); only a cursor of this listing is accepted.';

const listTag = (list: string) => hash('sha256', list, 'base64url').slice(0, 10);

export function encodeKeysetCursor(list: string, position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id, listTag(list)])).toString('base64url');
}

export const notACursorOf = (listing: KeysetListing) => `is not a cursor of this ${listing.cursor.of}`;

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

export function pageSize(listing: KeysetListing, value: number | null | undefined): number {
  const { name, min, max } = listing.size;
  const size = value ?? listing.size.default;
  if (!Number.isInteger(size) || size < min || size > max)
    throw badInput(`${name} must be an integer from ${min} to ${max}.`, [{ path: name, message: `must be between ${min} and ${max}` }]);
  return size;
}

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
 * Expects `size + 1` rows, the extra one telling whether another page follows. Rows inserted
 * meanwhile sort before the cursor, so a walk returns each row that existed at the start once.
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

export async function listingPage<T extends KeysetPosition>(
  list: string,
  args: PageArgs,
  select: (after: KeysetPosition | null, limit: number) => Promise<T[]>,
): Promise<Page<T>> {
  const size = pageSize(OPERATORS_LISTING, args.first);
  const after = pageCursor(OPERATORS_LISTING, list, args.after);
  return keysetPage(list, await select(after, size + 1), size, (row) => row);
}

/** For lists in a fixed order (a job's items by index), bound to their list like keyset cursors. */
export function encodeIndexCursor(list: string, position: number): string {
  return Buffer.from(JSON.stringify([position, listTag(list)])).toString('base64url');
}

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
