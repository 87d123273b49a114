/** A timestamp as the driver gives it: a Date, or PostgreSQL's text (MikroORM keeps timestamps as text). */
export type DbTimestamp = Date | string;

/** PostgreSQL's text output of a timestamptz in a UTC session (DateStyle ISO), e.g. `2026-11-01 12:34:56.78+00`. */
const UTC_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

/** That text as ISO 8601 with milliseconds, as `toISOString` writes it (a Date parsing the text reads years below 100 as 19xx or 20xx). */
function utcTextAsIso(text: string): string {
  const fraction = text[19] === '.' ? text.slice(20, -3) : '';
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${`${fraction}000`.slice(0, 3)}Z`;
}

export const toDate = (value: DbTimestamp): Date =>
  value instanceof Date ? value : new Date(UTC_TEXT.test(value) ? utcTextAsIso(value) : value);

/** ISO 8601 in UTC with milliseconds; UTC text is rewritten as text, since a Date's parse and `toISOString` showed in the feed's profile. */
export function isoTimestamp(value: DbTimestamp): string {
  return typeof value === 'string' && UTC_TEXT.test(value) ? utcTextAsIso(value) : toDate(value).toISOString();
}
