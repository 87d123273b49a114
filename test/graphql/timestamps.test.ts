/**
 * The DateTime scalar writes PostgreSQL's UTC text without a Date in between (`isoTimestamp`): it
 * must write exactly what `new Date(text).toISOString()` writes, and a feed page read from the
 * database must show the same instants the rows hold.
 */
import { describe, expect, it } from 'vitest';
import { isoTimestamp, toDate } from '../../src/common/to-date.js';

const viaDate = (value: string) => new Date(value).toISOString();

describe('isoTimestamp', () => {
  it('writes what a Date writes for every form of PostgreSQL UTC text (0 to 6 fraction digits)', () => {
    const texts = [
      '2026-11-01 12:34:56+00',
      '2026-11-01 12:34:56.7+00',
      '2026-11-01 12:34:56.78+00',
      '2026-11-01 12:34:56.789+00',
      '2026-11-01 12:34:56.7891+00',
      '2026-11-01 12:34:56.789999+00',
      '9999-12-31 23:59:59.999+00',
      '2024-02-29 00:00:00.001+00',
    ];
    for (const text of texts) expect({ text, iso: isoTimestamp(text) }).toEqual({ text, iso: viaDate(text) });
  });

  it('keeps years below 100, which a Date parsing this text reads as 19xx or 20xx', () => {
    expect(viaDate('0001-01-01 00:00:00+00')).toBe('2001-01-01T00:00:00.000Z');
    expect(isoTimestamp('0001-01-01 00:00:00+00')).toBe('0001-01-01T00:00:00.000Z');
    expect(isoTimestamp('0099-12-31 23:59:59.999+00')).toBe('0099-12-31T23:59:59.999Z');
    // A cursor's position is read through toDate: the same instant.
    expect(toDate('0001-01-01 00:00:00+00').toISOString()).toBe('0001-01-01T00:00:00.000Z');
  });

  it('reads any other text and a Date through a Date (other offsets, DateStyle, or what the embedded engine gives)', () => {
    expect(isoTimestamp('2026-11-01 13:34:56.789+01')).toBe('2026-11-01T12:34:56.789Z');
    expect(isoTimestamp('2026-11-01 07:04:56.5-05:30')).toBe('2026-11-01T12:34:56.500Z');
    expect(isoTimestamp('2026-11-01T12:34:56.789Z')).toBe('2026-11-01T12:34:56.789Z');
    expect(isoTimestamp(new Date(Date.UTC(2026, 10, 1, 12, 34, 56, 789)))).toBe('2026-11-01T12:34:56.789Z');
    expect(() => isoTimestamp('not a time')).toThrow(RangeError);
  });

  it('agrees with a Date on a spread of instants', () => {
    for (let i = 0; i < 2000; i++) {
      const millis = Date.UTC(1970 + (i % 60), i % 12, 1 + (i % 28), i % 24, (i * 7) % 60, (i * 13) % 60, (i * 37) % 1000);
      const iso = new Date(millis).toISOString();
      // PostgreSQL drops trailing zeros of the fraction, and the fraction when it is zero.
      const fraction = iso.slice(20, 23).replace(/0+$/, '');
      const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''}+00`;
      expect(isoTimestamp(text)).toBe(iso);
    }
  });
});
