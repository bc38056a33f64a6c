// The `htu` of a DPoP proof (RFC 9449 §4.3 check 9): the target URI without query and fragment, compared after
// syntax- and scheme-based normalisation (RFC 3986 §6.2.2, §6.2.3). The server's side is built from the configured
// public URL, never from the Host header, which the client controls.
import { withoutTrailingSlashes } from '../text/trim.ts';

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * WHATWG URL parsing lower-cases scheme and host, drops the default port, resolves dot segments and gives an empty
 * path `/`; left for us: percent-encodings in upper case, and unreserved characters decoded.
 */
export function normalizeHtu(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  url.search = '';
  url.hash = '';
  url.username = '';
  url.password = '';
  const path = url.pathname.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  return `${url.origin}${path}`;
}

/**
 * The URI the client addressed: the public URL's origin and path prefix, then the request's path. A proxy that
 * serves the service under a prefix usually strips it before the service sees the request; when it does not
 * (the request path already starts with the prefix), the prefix is not doubled.
 */
export function expectedHtu(publicUrl: string, requestUrl: string): string | undefined {
  const base = new URL(publicUrl);
  const prefix = withoutTrailingSlashes(base.pathname);
  const path = requestUrl.split(/[?#]/, 1)[0] || '/';
  const full = prefix && (path === prefix || path.startsWith(`${prefix}/`)) ? path : `${prefix}${path}`;
  return normalizeHtu(`${base.origin}${full}`);
}
