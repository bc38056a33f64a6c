// Timestamps of records come as to_jsonb writes them; the API shows them as Date#toISOString does.
import { describe, expect, it } from 'vitest';
import { isoTimestamp } from './records.ts';

describe('record timestamps', () => {
  it('rewrites UTC timestamps of every fraction length exactly as Date#toISOString, and others through Date', () => {
    const inputs = [
      '2026-11-27T10:53:07+00:00',
      '2026-11-27T10:53:07.1+00:00',
      '2026-11-27T10:53:07.12+00:00',
      '2026-11-27T10:53:07.123+00:00',
      '2026-11-27T10:53:07.1234+00:00',
      '2026-11-27T10:53:07.99999+00:00',
      '2026-11-27T23:59:59.999999+00:00',
      '1999-01-01T00:00:00.000001+00:00',
      '2026-11-27T10:53:07.123456+02:00',
      '2026-11-27T10:53:07.5-05:30',
    ];
    for (const input of inputs) expect(isoTimestamp(input), input).toBe(new Date(input).toISOString());
    expect(isoTimestamp('2026-11-27T10:53:07.123456+00:00')).toBe('2026-11-27T10:53:07.123Z');
    expect(() => isoTimestamp('not a time')).toThrow(RangeError);
  });
});
