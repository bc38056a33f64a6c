// Shared meaning of ByteRange for both drivers (see types.ts). A malformed range is a caller bug (the HTTP
// layer parses `Range` headers), so it is a RangeError; a well-formed range past the end is a 416.
import { RangeNotSatisfiableError } from './errors.ts';
import type { ByteRange } from './types.ts';

/** Throws RangeError for negative / non-integer bounds or `end < start`. */
export function checkRangeShape(range: ByteRange): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`invalid range start ${start}`);
  if (end !== undefined && (!Number.isSafeInteger(end) || end < start)) throw new RangeError(`invalid range end ${end}`);
}

/** `{ start: 0 }` alone means "the whole object" and needs no range request at all. */
export function isWholeObject(range: ByteRange | undefined): boolean {
  return range === undefined || (range.start === 0 && range.end === undefined);
}

/** Inclusive bounds within an object of `size` bytes, or undefined for the whole object. */
export function resolveRange(range: ByteRange | undefined, size: number): { start: number; end: number } | undefined {
  if (range === undefined) return undefined;
  checkRangeShape(range);
  if (isWholeObject(range)) return undefined;
  if (range.start >= size) throw new RangeNotSatisfiableError(size);
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}
