// `Range: bytes=first-last` and `bytes=-suffix` (RFC 9110 14.1.2) for one range, as both download routes serve it.
// Several ranges, other units and malformed values get the whole file (a server may ignore Range); a range that
// starts past the end is a 416. Read with string scanning, not a regular expression: the header comes from anyone
// who can read one public file, and the pattern it replaced backtracked cubically on runs of spaces.

export type RangeRequest = { kind: 'none' } | { kind: 'range'; start: number; end: number } | { kind: 'unsatisfiable' };

const NONE: RangeRequest = { kind: 'none' };
const DIGITS = /^\d*$/; // one run, anchored at both ends: linear

/** A byte position as written (digits only), or undefined; '' stays '' (an open end). */
function position(text: string): string | undefined {
  const trimmed = text.trim();
  return DIGITS.test(trimmed) ? trimmed : undefined;
}

/** The one range of `header` resolved against a file of `size` bytes. Empty files are sent whole. */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (!header || size === 0) return NONE;
  const equals = header.indexOf('=');
  if (equals === -1 || header.slice(0, equals).trim().toLowerCase() !== 'bytes') return NONE;
  const set = header.slice(equals + 1);
  const dash = set.indexOf('-');
  if (dash === -1 || set.includes(',')) return NONE;
  const first = position(set.slice(0, dash));
  const last = position(set.slice(dash + 1));
  if (first === undefined || last === undefined || (first === '' && last === '')) return NONE;
  if (first === '') {
    // Suffix: the last N bytes.
    const length = Number(last);
    if (!Number.isSafeInteger(length)) return NONE;
    if (length === 0) return { kind: 'unsatisfiable' };
    return { kind: 'range', start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Number.MAX_SAFE_INTEGER : Number(last);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return NONE;
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'range', start, end: Math.min(end, size - 1) };
}
