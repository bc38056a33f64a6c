// Trimming runs of given characters by scanning, where `replace(/x+$/, '')` would be quadratic: that pattern is
// tried at every position of a long run that is not at the end (`////…a`), which the ReDoS lint rule refuses.

/** `value` without the run of `characters` (each one character) at its end. */
export function trimTrailing(value: string, characters: string): string {
  let end = value.length;
  while (end > 0 && characters.includes(value[end - 1]!)) end--;
  return value.slice(0, end);
}

/** `value` without the run of `characters` at its start. */
export function trimLeading(value: string, characters: string): string {
  let start = 0;
  while (start < value.length && characters.includes(value[start]!)) start++;
  return value.slice(start);
}

/** A URL or path without its trailing slashes (`https://a/b//` → `https://a/b`). */
export const withoutTrailingSlashes = (value: string): string => trimTrailing(value, '/');
