// Where to go after signing in or out: only a path on this service. Anything else — an absolute URL, a
// scheme-relative `//host`, `/\host` (browsers read `\` as `/`), control characters — falls back to `/`, so
// the sign-in routes can't be used as an open redirect. What is returned is re-serialised by the URL parser, so
// every character beyond ASCII is percent-encoded: it always fits a Location header (Node refuses characters
// beyond Latin-1 there: a raw one was a 500 after a successful sign-in). Every sign-in form uses this rule.

const BASE = new URL('http://return-to.invalid');

export function safeReturnPath(value: unknown, fallback = '/'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return fallback;
  if (!value.startsWith('/') || value.startsWith('//')) return fallback;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (/[\\\u0000-\u001f\u007f]/.test(value)) return fallback;
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return fallback;
  }
  if (url.origin !== BASE.origin) return fallback;
  // Back into the sign-in routes would loop.
  if (url.pathname.startsWith('/auth/oidc/')) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}
