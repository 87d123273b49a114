import { createHash } from 'node:crypto';
import { isInTimestampRange } from './timestamp-range.js';
import { isUuid } from './uuid.js';

/** The position after the last row of a page: keyset pagination on (created_at desc, id desc). */
export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

/** Binds a cursor to the list it pages (e.g. one caller's feed), so a cursor of another list is refused. */
const listTag = (list: string) => createHash('sha256').update(list).digest('base64url').slice(0, 10);

/**
 * What every cursor this service issues looks like, for the published JSON Schemas: base64url
 * (unpadded) of `[millis,"uuid","tag"]`, whose JSON is 55 to 69 bytes (millis has 1 to 15
 * characters within the stored range), so 74 to 92 characters, the first one `W` (from `[`).
 */
export const KEYSET_CURSOR_PATTERN = '^W[A-Za-z0-9_-]{73,91}$';
export const KEYSET_CURSOR_DESCRIPTION =
  'An opaque token issued by the server (nextCursor of the previous page); only a cursor of this listing is accepted.';

/** An opaque cursor: the position, tagged with the list it belongs to. */
export function encodeKeysetCursor(list: string, position: KeysetPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.getTime(), position.id, listTag(list)])).toString('base64url');
}

/** The position a cursor of `list` names; null for a malformed cursor or one of another list (each caller words its refusal). */
export function decodeKeysetCursor(list: string, cursor: string): KeysetPosition | null {
  const read = readKeysetCursor(cursor);
  return read && read.of(list) ? read.position : null;
}

/**
 * A cursor's position before its list is known (e.g. the owner of a key still being looked up),
 * and whether it belongs to a list; null for a malformed cursor.
 */
export function readKeysetCursor(cursor: string): { position: KeysetPosition; of: (list: string) => boolean } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return null;
  const [millis, id, tag] = parsed as unknown[];
  // A position outside the stored range was never issued, and PostgreSQL would refuse to compare
  // it (a valid JavaScript Date reaches ±8.64e15 ms, far past timestamptz).
  if (!Number.isSafeInteger(millis) || !isInTimestampRange(millis as number) || !isUuid(id)) return null;
  return { position: { createdAt: new Date(millis as number), id }, of: (list) => tag === listTag(list) };
}
