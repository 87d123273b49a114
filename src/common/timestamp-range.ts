/**
 * The instants the service stores and accepts: 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z.
 * PostgreSQL's timestamptz holds more (4713 BC to 294276 AD), but ISO 8601 with a four-digit year
 * cannot print more, so the DateTime scalar accepts exactly this and no stored row lies outside it.
 */
export const EARLIEST_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const LATEST_TIMESTAMP_MS = Date.parse('9999-12-31T23:59:59.999Z');

export function isInTimestampRange(millis: number): boolean {
  return millis >= EARLIEST_TIMESTAMP_MS && millis <= LATEST_TIMESTAMP_MS;
}
