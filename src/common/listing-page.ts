import { badInput } from './errors.js';
import { decodeKeysetCursor, encodeKeysetCursor, type KeysetPosition } from './keyset-cursor.js';

/** The operators' listings (organizations, users, a user's keys): `first` rows per page. */
export const LISTING_PAGE_SIZE = { default: 50, min: 1, max: 200 } as const;

export interface PageArgs {
  first?: number | null;
  after?: string | null;
}

export interface Page<T> {
  nodes: T[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/**
 * One page of a listing newest first: checks `first`, reads the cursor `after` (bound to `list`,
 * so a cursor of another listing is refused), and asks `select` for one row more than the page to
 * tell whether another follows. Rows inserted meanwhile sort before the cursor, so walking every
 * page returns each row that existed at the first call exactly once.
 */
export async function listingPage<T extends KeysetPosition>(
  list: string,
  args: PageArgs,
  select: (after: KeysetPosition | null, limit: number) => Promise<T[]>,
): Promise<Page<T>> {
  const first = args.first ?? LISTING_PAGE_SIZE.default;
  if (!Number.isInteger(first) || first < LISTING_PAGE_SIZE.min || first > LISTING_PAGE_SIZE.max) {
    throw badInput(`first must be an integer from ${LISTING_PAGE_SIZE.min} to ${LISTING_PAGE_SIZE.max}.`, [
      { path: 'first', message: `must be between ${LISTING_PAGE_SIZE.min} and ${LISTING_PAGE_SIZE.max}` },
    ]);
  }
  let after: KeysetPosition | null = null;
  if (args.after) {
    after = decodeKeysetCursor(list, args.after);
    if (!after)
      throw badInput('after is malformed or belongs to another listing.', [{ path: 'after', message: 'is not a cursor of this listing' }]);
  }
  const rows = await select(after, first + 1);
  const nodes = rows.slice(0, first);
  const last = nodes[nodes.length - 1];
  return { nodes, nextCursor: rows.length > first && last ? encodeKeysetCursor(list, last) : null };
}
