/** A feed event's SSE id: its log entry's id, plus `/<index>` when more of that change's events follow, so a resume lands at the next. */
export interface EventPosition {
  entryId: string;
  entry: [number, number];
  /** The event's index among its entry's events; Infinity: the entry is done for this stream. */
  index: number;
}

/** The id of an event the log could not hold (Redis away): resuming from it is a `reset`. */
export const UNLOGGED_ID = '0-0';

const EVENT_ID = /^(\d{1,15})-(\d{1,15})(?:\/(\d{1,4}))?$/;

export const eventIdOf = (entryId: string, index: number | null) => (index === null ? entryId : `${entryId}/${index}`);

/** `raw`'s position, or null for what no event of ours carries (malformed, oversized, the unlogged id). */
export function eventPosition(raw: string | null | undefined): EventPosition | null {
  const match = raw && raw.length <= 40 ? EVENT_ID.exec(raw) : null;
  if (!match) return null;
  const entry: [number, number] = [Number(match[1]), Number(match[2])];
  if (entry[0] === 0 && entry[1] === 0) return null;
  return { entryId: `${match[1]}-${match[2]}`, entry, index: match[3] === undefined ? Infinity : Number(match[3]) };
}

/** Whether position `a` comes after `b`. */
export function isAfterPosition(a: EventPosition, b: EventPosition): boolean {
  if (a.entry[0] !== b.entry[0]) return a.entry[0] > b.entry[0];
  if (a.entry[1] !== b.entry[1]) return a.entry[1] > b.entry[1];
  return a.index > b.index;
}
