// A browser's part of an OpenID sign-in, at the HTTP level: a cookie jar, redirects followed by hand, and the
// harness provider's development forms (login: any password; consent; RP-initiated logout confirmation)
// submitted as a person would. Tests that don't need Chromium drive the whole authorization code flow with it.

interface StoredCookie {
  name: string;
  value: string;
  host: string;
  path: string;
}

/** Cookies per host and path, as a browser keeps them (ports share cookies; attributes beyond Path/Max-Age ignored). */
export class CookieJar {
  private readonly cookies = new Map<string, StoredCookie>();

  store(url: URL, setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq < 1) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      let path = '/';
      let expired = value === '';
      for (const attribute of attributes) {
        const [key = '', val = ''] = attribute.split('=');
        const k = key.trim().toLowerCase();
        if (k === 'path') path = val.trim() || '/';
        if (k === 'max-age' && Number(val) <= 0) expired = true;
        if (k === 'expires' && Date.parse(val) <= Date.now()) expired = true;
      }
      const key = `${url.hostname}|${path}|${name}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { name, value, host: url.hostname, path });
    }
  }

  /** The Cookie header a browser would send to `url`. */
  header(url: URL): string {
    return [...this.cookies.values()]
      .filter((c) => c.host === url.hostname && (url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)))
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  get(url: URL, name: string): string | undefined {
    return [...this.cookies.values()].find((c) => c.host === url.hostname && c.name === name)?.value;
  }

  set(url: URL, name: string, value: string, path = '/'): void {
    this.cookies.set(`${url.hostname}|${path}|${name}`, { name, value, host: url.hostname, path });
  }

  delete(url: URL, name: string): void {
    for (const [key, c] of this.cookies) if (c.host === url.hostname && c.name === name) this.cookies.delete(key);
  }
}

export interface Fetched {
  url: URL;
  status: number;
  headers: Headers;
  body: string;
  /** The absolute Location of a redirect. */
  location?: URL;
}

/** One request with the jar's cookies; the response's cookies go into the jar. Redirects are not followed. */
export async function request(
  jar: CookieJar,
  url: URL | string,
  init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<Fetched> {
  const target = new URL(url);
  const headers: Record<string, string> = { accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8', ...init.headers };
  const cookie = jar.header(target);
  if (cookie) headers.cookie = cookie;
  let body: string | undefined;
  if (init.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(init.form).toString();
  }
  const response = await fetch(target, { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
  jar.store(target, response.headers.getSetCookie());
  const location = response.headers.get('location');
  return {
    url: target,
    status: response.status,
    headers: response.headers,
    body: await response.text(),
    ...(location ? { location: new URL(location, target) } : {}),
  };
}

const formAction = (html: string, base: URL, id?: string): URL => {
  const pattern = id ? new RegExp(`<form[^>]*id="${id}"[^>]*action="([^"]+)"|<form[^>]*action="([^"]+)"[^>]*id="${id}"`) : /<form[^>]*action="([^"]+)"/;
  const match = pattern.exec(html);
  const action = match?.[1] ?? match?.[2];
  if (!action) throw new Error(`no form in the provider's page: ${html.slice(0, 300)}`);
  return new URL(action.replaceAll('&amp;', '&'), base);
};

/**
 * From an authorization URL to the provider's redirect back to the client (returned, not followed): follows
 * the provider's redirects and fills its development login form (`login`, any password) and consent form as
 * they come. With `cancel`, the login page's "[ Cancel ]" link is followed instead (error=access_denied).
 */
export async function signInAtProvider(jar: CookieJar, authorizationUrl: URL | string, login: string, options: { cancel?: boolean } = {}): Promise<URL> {
  const provider = new URL(authorizationUrl).origin;
  let next: Fetched = await request(jar, authorizationUrl);
  for (let step = 0; step < 20; step++) {
    if (next.location) {
      if (next.location.origin !== provider) return next.location;
      next = await request(jar, next.location);
      continue;
    }
    if (next.status !== 200) throw new Error(`provider answered ${next.status} at ${next.url.pathname}: ${next.body.slice(0, 500)}`);
    if (next.body.includes('name="prompt" value="login"')) {
      if (options.cancel) {
        const abort = /href="([^"]*\/abort)"/.exec(next.body)?.[1];
        if (!abort) throw new Error('no cancel link on the login page');
        next = await request(jar, new URL(abort, next.url));
      } else {
        next = await request(jar, formAction(next.body, next.url), { form: { prompt: 'login', login, password: 'any password' } });
      }
    } else if (next.body.includes('name="prompt" value="consent"')) {
      next = await request(jar, formAction(next.body, next.url), { form: { prompt: 'consent' } });
    } else {
      throw new Error(`unexpected provider page at ${next.url.pathname}: ${next.body.slice(0, 500)}`);
    }
  }
  throw new Error('too many steps at the provider');
}

/** From an end-session URL: confirms the provider's "sign out?" form; returns the redirect back to the client. */
export async function signOutAtProvider(jar: CookieJar, endSessionUrl: URL | string): Promise<URL> {
  const provider = new URL(endSessionUrl).origin;
  let next = await request(jar, endSessionUrl);
  for (let step = 0; step < 10; step++) {
    if (next.location) {
      if (next.location.origin !== provider) return next.location;
      next = await request(jar, next.location);
      continue;
    }
    if (next.status !== 200 || !next.body.includes('op.logoutForm'))
      throw new Error(`provider answered ${next.status} at ${next.url.pathname}: ${next.body.slice(0, 500)}`);
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(next.body)?.[1];
    if (!xsrf) throw new Error('no xsrf field in the logout form');
    next = await request(jar, formAction(next.body, next.url, 'op.logoutForm'), { form: { xsrf, logout: 'yes' } });
  }
  throw new Error('too many steps at the provider');
}
