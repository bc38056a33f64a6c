// Provider sign-in on the terminal, at the HTTP level against the harness's real OpenID provider (oidc-provider):
// the cookie a browser ends with works on REST and the terminal socket like a password session; state, replay
// and return_to are guarded; groups make admins; sign-out ends the session here and at the provider.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { CookieJar, request, signInAtProvider, signOutAtProvider } from '@boxyard/test/harness/oidc-login.ts';
import { startOidcProvider, type RunningOidcProvider } from '@boxyard/test/harness/oidc-provider.ts';
import { freePort } from '@boxyard/test/harness/ports.ts';
import { api, openTerminal, startTestGateway } from './testing/test-gateway.ts';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

const signInConfig = (idp: RunningOidcProvider, client: { client_id: string; client_secret?: string }) => ({
  auth: {
    resource_server: { admin_groups: ['ops'] },
    sign_in: { enabled: true, issuer: idp.issuer, scopes: ['openid', 'profile', 'email', 'groups'], display_name: 'Test IdP', ...client },
  },
});

/** Starts a gateway on a port chosen first, so the provider can know its redirect URIs. */
async function gatewayFor(
  idp: (redirect: {
    redirect_uris: string[];
    post_logout_redirect_uris: string[];
  }) => Promise<{ idp: RunningOidcProvider; client: { client_id: string; client_secret?: string } }>,
) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const { idp: provider, client } = await idp({ redirect_uris: [`${url}/auth/oidc/callback`], post_logout_redirect_uris: [`${url}/`] });
  const gateway = await startTestGateway(await createTestDatabase('terminal_oidc'), { server: { port }, ...signInConfig(provider, client) });
  return { gateway, idp: provider };
}

describe('terminal: sign-in with an OpenID provider', () => {
  let idp: RunningOidcProvider;
  let gateway: Gateway;
  const secret = 'terminal-web-secret-0123456789';

  beforeAll(async () => {
    ({ gateway, idp } = await gatewayFor(async (uris) => {
      const provider = await startOidcProvider({
        resources: ['https://terminal.example.test'],
        clients: [{ client_id: 'terminal-web', client_secret: secret, ...uris }],
        users: [
          { login: 'alice', groups: ['ops', 'devs'] },
          { login: 'bob', groups: ['devs'] },
        ],
      });
      return { idp: provider, client: { client_id: 'terminal-web', client_secret: secret } };
    }));
  });

  afterAll(async () => {
    await gateway?.close();
    await idp?.stop();
  });

  const base = () => new URL(gateway.url);

  /** The browser's whole round trip: our login route, the provider's forms, our callback. */
  async function signIn(login: string, options: { jar?: CookieJar; returnTo?: string } = {}) {
    const jar = options.jar ?? new CookieJar();
    const start = await request(jar, `${gateway.url}/auth/oidc/login?return_to=${encodeURIComponent(options.returnTo ?? '/')}`);
    expect(start.status).toBe(303);
    const callback = await signInAtProvider(jar, start.location!, login);
    const done = await request(jar, callback);
    const token = jar.get(base(), 'auth_token');
    return { jar, start, callback, done, cookie: `auth_token=${token}` };
  }

  /** Whether the provider shows its login form for a new sign-in (false: its session signs the user in at once). */
  async function providerAsksToLogIn(jar: CookieJar): Promise<boolean> {
    const start = await request(jar, `${gateway.url}/auth/oidc/login`);
    let next = await request(jar, start.location!);
    while (next.location && next.location.origin === new URL(idp.issuer).origin) next = await request(jar, next.location);
    return next.body.includes('name="prompt" value="login"');
  }

  it('redirects to the provider with PKCE (S256), state and nonce, kept in a sealed SameSite=Lax cookie', async () => {
    const jar = new CookieJar();
    const start = await request(jar, `${gateway.url}/auth/oidc/login?return_to=/`);
    expect(start.status).toBe(303);
    const to = start.location!;
    expect(to.origin).toBe(new URL(idp.issuer).origin);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      client_id: 'terminal-web',
      response_type: 'code',
      redirect_uri: `${gateway.url}/auth/oidc/callback`,
      code_challenge_method: 'S256',
      scope: 'openid profile email groups',
    });
    for (const name of ['state', 'nonce', 'code_challenge']) expect(to.searchParams.get(name)).toMatch(/^[\w-]{32,}$/);
    const cookie = start.headers.getSetCookie().find((c) => c.startsWith('boxyard_oidc_terminal='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/Secure/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/auth\/oidc\//);
    expect(cookie).not.toContain(to.searchParams.get('state')!);
  });

  it('ends in the service session cookie, which works on REST and the terminal socket', async () => {
    const { done, cookie } = await signIn('alice');
    expect(done.status).toBe(303);
    expect(done.location?.href).toBe(`${gateway.url}/`);
    const set = done.headers.getSetCookie().find((c) => c.startsWith('auth_token='))!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/Secure/i);
    expect(set).toMatch(/SameSite=Strict/i);
    const status = await api(gateway.url, 'GET', '/auth/status', { cookie });
    expect(status.json.data).toMatchObject({ authenticated: true, user: { username: 'alice', role: 'admin' } });

    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'oidc-alice' } });
    expect(started.status).toBe(200);
    const term = await openTerminal(gateway.url, started.json.data.websocket_path, { cookie });
    try {
      term.type('echo $((6*7))\n');
      await term.waitFor(/^42$/m);
    } finally {
      await term.close();
      await gateway.sessions.stop(started.json.data.session.id);
    }
  });

  it('maps the same provider user to the same Boxyard user every time; admin only through admin_groups', async () => {
    const jar = new CookieJar();
    const first = await signIn('bob', { jar });
    const firstUser = (await api(gateway.url, 'GET', '/auth/status', { cookie: first.cookie })).json.data.user;
    expect(firstUser).toMatchObject({ username: 'bob', role: 'user' });
    // The provider remembers bob: the second sign-in skips its form.
    expect(await providerAsksToLogIn(jar)).toBe(false);
    const second = await signIn('bob', { jar });
    expect(second.cookie).not.toBe(first.cookie);
    expect((await api(gateway.url, 'GET', '/auth/status', { cookie: second.cookie })).json.data.user).toEqual(firstUser);
    const admins = await api(gateway.url, 'GET', '/api/users', { cookie: second.cookie });
    expect(admins.status).toBe(403);
    const alice = await signIn('alice');
    const users = (await api(gateway.url, 'GET', '/api/users', { cookie: alice.cookie })).json.data.users as { username: string }[];
    expect(users.filter((u) => u.username === 'bob')).toHaveLength(1);
    expect(users.filter((u) => u.username === 'alice')).toHaveLength(1);
  });

  it('ignores a return_to that leaves the service, and keeps one that stays', async () => {
    for (const evil of ['https://evil.example', '//evil.example/x', '/\\evil.example', 'javascript:alert(1)']) {
      const { done } = await signIn('bob', { returnTo: evil });
      expect(done.location?.href, evil).toBe(`${gateway.url}/`);
    }
    const { done } = await signIn('bob', { returnTo: '/api-docs?x=1' });
    expect(done.location?.href).toBe(`${gateway.url}/api-docs?x=1`);
  });

  it('refuses a forged or missing state, and a replayed callback', async () => {
    const json = { accept: 'application/json' };
    // Forged state.
    let jar = new CookieJar();
    let start = await request(jar, `${gateway.url}/auth/oidc/login`);
    let callback = await signInAtProvider(jar, start.location!, 'bob');
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state-value');
    let refused = await request(jar, forged, { headers: json });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body)).toMatchObject({ success: false, message: expect.stringMatching(/state mismatch/) });
    expect(jar.get(base(), 'auth_token')).toBeUndefined();

    // No transaction cookie (another browser, or expired): a page a person can read, no stack trace.
    jar = new CookieJar();
    start = await request(jar, `${gateway.url}/auth/oidc/login`);
    callback = await signInAtProvider(jar, start.location!, 'bob');
    jar.delete(base(), 'boxyard_oidc_terminal');
    refused = await request(jar, callback);
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^text\/html/);
    expect(refused.body).toContain('No sign-in in progress');
    expect(refused.body).not.toMatch(/at \w+ \(|node_modules/);

    // Replayed: the same response again, even with the transaction cookie put back.
    jar = new CookieJar();
    start = await request(jar, `${gateway.url}/auth/oidc/login`);
    callback = await signInAtProvider(jar, start.location!, 'bob');
    const transaction = jar.get(base(), 'boxyard_oidc_terminal')!;
    expect((await request(jar, callback)).status).toBe(303);
    refused = await request(jar, callback, { headers: json });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).message).toMatch(/No sign-in in progress/);
    jar.set(base(), 'boxyard_oidc_terminal', transaction, '/auth/oidc/');
    jar.delete(base(), 'auth_token');
    refused = await request(jar, callback, { headers: json });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).message).toMatch(/already used/);
    expect(jar.get(base(), 'auth_token')).toBeUndefined();
  });

  it('answers a sign-in refused at the provider with a clear error', async () => {
    const jar = new CookieJar();
    const start = await request(jar, `${gateway.url}/auth/oidc/login`);
    const callback = await signInAtProvider(jar, start.location!, 'bob', { cancel: true });
    expect(callback.searchParams.get('error')).toBe('access_denied');
    const refused = await request(jar, callback, { headers: { accept: 'application/json' } });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toEqual({
      success: false,
      message: 'Sign-in was not completed: The provider answered access_denied: End-User aborted interaction.',
      details: 'Authentication required',
    });
  });

  it('signs out of the service and, through RP-initiated logout, of the provider', async () => {
    const { jar, cookie } = await signIn('alice');
    expect(await providerAsksToLogIn(jar)).toBe(false);
    const out = await request(jar, `${gateway.url}/auth/oidc/logout`, { method: 'POST', headers: { accept: '*/*' } });
    expect(out.status).toBe(303);
    const end = out.location!;
    expect(end.origin + end.pathname).toBe(`${idp.issuer}/session/end`);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${gateway.url}/`);
    expect(end.searchParams.get('client_id')).toBe('terminal-web');
    expect(end.searchParams.get('id_token_hint')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(out.headers.getSetCookie().find((c) => c.startsWith('auth_token='))).toMatch(/auth_token=;/);
    // The old cookie no longer works anywhere.
    expect((await api(gateway.url, 'GET', '/auth/status', { cookie })).json.data.authenticated).toBe(false);
    expect((await api(gateway.url, 'GET', '/api/terminal/sessions', { cookie })).status).toBe(401);
    // The provider confirms and sends the browser back here; its session is over.
    expect((await signOutAtProvider(jar, end)).href).toBe(`${gateway.url}/`);
    expect(await providerAsksToLogIn(jar)).toBe(true);
  });

  it('answers a browser form with a page that goes on to the provider by itself', async () => {
    const { jar } = await signIn('bob');
    const out = await request(jar, `${gateway.url}/auth/oidc/logout`, { method: 'POST', form: {} });
    expect(out.status).toBe(200);
    expect(out.headers.get('content-type')).toMatch(/^text\/html/);
    const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(out.body)?.[1]?.replaceAll('&amp;', '&');
    expect(refresh).toMatch(new RegExp(`^${idp.issuer}/session/end\\?`));
    expect(new URL(refresh!).searchParams.get('id_token_hint')).toBeTruthy();
    expect(jar.get(base(), 'auth_token')).toBeUndefined();
  });

  it('answers JSON sign-out with the provider URL for pages that navigate themselves', async () => {
    const { cookie } = await signIn('bob');
    const logout = () => fetch(`${gateway.url}/auth/oidc/logout`, { method: 'POST', headers: { cookie, accept: 'application/json' }, redirect: 'manual' });
    const out = await logout();
    expect(out.status).toBe(200);
    expect(await out.json()).toMatchObject({
      success: true,
      message: 'Signed out',
      data: { signed_out: true, end_session_url: expect.stringContaining(`${idp.issuer}/session/end?`) },
    });
    expect(await (await logout()).json()).toMatchObject({ success: true, message: 'Not signed in', data: { signed_out: false, end_session_url: null } });
  });

  it('lists the provider sign-in among the methods', async () => {
    const methods = (await api(gateway.url, 'GET', '/auth/methods')).json.data.methods;
    expect(methods).toContainEqual({
      type: 'oidc',
      method: 'GET',
      path: '/auth/oidc/login?return_to=/',
      logout: '/auth/oidc/logout',
      display_name: 'Test IdP',
      cookie: 'auth_token',
    });
  });
});

describe('terminal: provider sign-in variants', () => {
  it('works with a public client (PKCE alone, no secret)', async () => {
    const { gateway, idp } = await gatewayFor(async (uris) => ({
      idp: await startOidcProvider({
        resources: ['https://terminal.example.test'],
        clients: [{ client_id: 'terminal-public', client_secret: '', token_endpoint_auth_method: 'none', ...uris }],
      }),
      client: { client_id: 'terminal-public' },
    }));
    try {
      const jar = new CookieJar();
      const start = await request(jar, `${gateway.url}/auth/oidc/login`);
      const done = await request(jar, await signInAtProvider(jar, start.location!, 'dana'));
      expect(done.status).toBe(303);
      const status = await api(gateway.url, 'GET', '/auth/status', { cookie: `auth_token=${jar.get(new URL(gateway.url), 'auth_token')}` });
      expect(status.json.data.user).toMatchObject({ username: 'dana', role: 'user' });
    } finally {
      await gateway.close();
      await idp.stop();
    }
  });

  it('takes the claims from userinfo when the ID token carries only sub', async () => {
    const { gateway, idp } = await gatewayFor(async (uris) => ({
      idp: await startOidcProvider({
        userinfoTokens: true,
        resources: ['https://terminal.example.test'],
        clients: [{ client_id: 'terminal-web', client_secret: 'terminal-web-secret-0123456789', ...uris }],
        users: [{ login: 'erin', groups: ['ops'] }],
      }),
      client: { client_id: 'terminal-web', client_secret: 'terminal-web-secret-0123456789' },
    }));
    try {
      const jar = new CookieJar();
      const start = await request(jar, `${gateway.url}/auth/oidc/login`);
      expect((await request(jar, await signInAtProvider(jar, start.location!, 'erin'))).status).toBe(303);
      const status = await api(gateway.url, 'GET', '/auth/status', { cookie: `auth_token=${jar.get(new URL(gateway.url), 'auth_token')}` });
      expect(status.json.data.user).toMatchObject({ username: 'erin', role: 'admin' });
    } finally {
      await gateway.close();
      await idp.stop();
    }
  });

  it('starts while the provider is away, and says so at sign-in', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    const gateway = await startTestGateway(await createTestDatabase('terminal_oidc_down'), {
      auth: { sign_in: { enabled: true, issuer, client_id: 'nobody' } },
    });
    try {
      const json = await request(new CookieJar(), `${gateway.url}/auth/oidc/login`, { headers: { accept: 'application/json' } });
      expect(json.status).toBe(502);
      expect(JSON.parse(json.body)).toMatchObject({ success: false, message: expect.stringMatching(/identity provider could not be reached/) });
      const html = await request(new CookieJar(), `${gateway.url}/auth/oidc/login`);
      expect(html.status).toBe(502);
      expect(html.body).toContain('Sign-in unavailable');
    } finally {
      await gateway.close();
    }
  });
});
