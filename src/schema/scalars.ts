import { isInTimestampRange } from '../common/timestamp-range.js';
import { badInput } from '../common/errors.js';
import { builder } from './builder.js';
import { isoTimestamp, type DbTimestamp } from '../common/to-date.js';

/** The instant an ISO 8601 timestamp names, or null when it is none (range aside). The REST routes' `date-time` format is this check. */
export function readTimestamp(value: string): Date | null {
  const date = /^\d{4}-\d{2}-\d{2}T/.test(value) ? new Date(value) : null;
  return date && !Number.isNaN(date.getTime()) ? date : null;
}

/** ISO 8601 UTC timestamps with milliseconds. */
builder.scalarType('DateTime', {
  description: 'An ISO 8601 timestamp in UTC, e.g. 2026-11-23T08:15:30.123Z.',
  serialize: (value) => isoTimestamp(value as DbTimestamp),
  parseValue: (value) => {
    const date = typeof value === 'string' ? readTimestamp(value) : null;
    if (!date) throw badInput('DateTime must be an ISO 8601 timestamp.');
    if (!isInTimestampRange(date.getTime())) throw badInput('DateTime must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z.');
    return date;
  },
});
