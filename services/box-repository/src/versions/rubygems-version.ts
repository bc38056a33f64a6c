// Version strings as RubyGems reads them (Gem::Version), which is how Vagrant, `vagrant cloud` and Packer read
// them: `1.2.3`, `20241101.275802`, `1.2.3.4`, `2.0.0.rc1`, `1.0-beta` (a "-" reads as ".pre."). Ordering:
// segments are runs of digits (numbers) or of letters (strings); trailing zero segments do not count (1.0 = 1);
// a missing segment counts as 0; a string sorts before any number, so a letter marks a pre-release that sorts
// before its release (2.0.0.rc1 < 2.0.0 < 2.0.0.1). Strings compare byte by byte.
// The database orders by `versions.version_key`, computed from the string by the SQL function
// rubygems_version_key (migration 0009) with the same rules; compareVersions is the reference the tests check it against.

/** Gem::Version's pattern without surrounding blanks, at most 64 characters (checked by maxLength beside it). */
export const VERSION_PATTERN = '^[0-9]+(\\.[0-9A-Za-z]+)*(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$';
export const VERSION_MAX_LENGTH = 64;
export const VERSION_DETAIL =
  'a RubyGems-style version: digits first, then "."-separated digits or letters (1.2.3, 20241101.275802, 2.0.0.rc1), at most 64 characters';
const versionPattern = new RegExp(VERSION_PATTERN);

/** The JSON-schema of a version string on every route that creates or renames a version. */
export const versionString = {
  type: 'string',
  pattern: VERSION_PATTERN,
  maxLength: VERSION_MAX_LENGTH,
  description: 'RubyGems-style version (1.2.3, 20241101.275802, 2.0.0.rc1)',
} as const;

export const isVersionString = (value: string): boolean => value.length <= VERSION_MAX_LENGTH && versionPattern.test(value);

type Segment = bigint | string;

/** Gem::Version#canonical_segments: numbers and letter runs, trailing zeros of the release and pre-release parts dropped. */
export function canonicalSegments(version: string): Segment[] {
  const raw = (version.replaceAll('-', '.pre.').match(/[0-9]+|[A-Za-z]+/g) ?? []).map((s): Segment => (/^[0-9]/.test(s) ? BigInt(s) : s));
  const firstString = raw.findIndex((s) => typeof s === 'string');
  const release = firstString < 0 ? raw : raw.slice(0, firstString);
  const pre = firstString < 0 ? [] : raw.slice(firstString);
  const trim = (segments: Segment[]) => {
    let end = segments.length;
    while (end > 0 && segments[end - 1] === 0n) end -= 1;
    return segments.slice(0, end);
  };
  return [...trim(release), ...trim(pre)];
}

/** Gem::Version#<=>: negative, 0 or positive. */
export function compareVersions(left: string, right: string): number {
  const a = canonicalSegments(left);
  const b = canonicalSegments(right);
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    const x = a[i] ?? 0n;
    const y = b[i] ?? 0n;
    if (x === y) continue;
    if (typeof x === 'string' && typeof y === 'bigint') return -1;
    if (typeof x === 'bigint' && typeof y === 'string') return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}
