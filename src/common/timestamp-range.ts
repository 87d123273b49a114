/** timestamptz holds more, but ISO 8601 with a four-digit year cannot print more; the DateTime scalar accepts exactly this. */
export const EARLIEST_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00.000Z');
export const LATEST_TIMESTAMP_MS = Date.parse('9999-12-31T23:59:59.999Z');

export function isInTimestampRange(millis: number): boolean {
  return millis >= EARLIEST_TIMESTAMP_MS && millis <= LATEST_TIMESTAMP_MS;
}
