// The box console over plain HTTP, as a browser without JavaScript (or curl) sees it: pages are complete HTML
// with a strict CSP, private boxes show only to members, the session cookie's flags, cross-site writes refused,
// sign-out revoking the cookie's session, and the Vagrant paths still answering JSON next to the pages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '../testing/boxes.ts';
import { addMember, createBoxPath, createOrganization, startTestService, uploadRaw, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

const STRICT_CSP = "default-src 'self'; script-src 'self'; style-src 'self'";

describe('box console pages (no JavaScript)', () => {
  let service: TestService;
  let boxSha: string;
  let memberCookie: string;
  let outsiderCookie: string;

  const get = (path: string, cookie?: string) => service.request('GET', path, { headers: { accept: 'text/html', ...(cookie ? { cookie } : {}) } });
  /** Signs in through the console's form, as a browser does; returns the Cookie header value. */
  async function formSignIn(username: string, password: string, returnTo = '/') {
    const response = await fetch(`${service.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: service.url },
      body: new URLSearchParams({ username, password, return_to: returnTo }),
    });
    return response;
  }
  const cookieOf = (response: Response) => response.headers.get('set-cookie')!.split(';')[0]!;

  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'acme', { description: 'Acme boxes' });
    const pub = { org: 'acme', box: 'ubuntu', version: '1.2.3', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, service.adminToken, pub, { isPublic: true, description: 'Ubuntu <script>alert(1)</script> base box' });
    const box = await makeBox();
    boxSha = sha256(box);
    expect((await uploadRaw(service, pub, box, { token: service.adminToken })).status).toBe(201);
    await createBoxPath(service, service.adminToken, { ...pub, box: 'secret-box' }, { isPublic: false, description: 'internal only' });
    const member = await service.createUser('member1');
    await service.createUser('outsider1');
    await addMember(service, 'acme', member.username, 'user');
    memberCookie = cookieOf(await formSignIn('member1', USER_PASSWORD));
    outsiderCookie = cookieOf(await formSignIn('outsider1', USER_PASSWORD));
  });

  afterAll(async () => {
    await service?.close();
  });

  it('opens an invitation link as a sign-up page that makes the account, signs it in and joins the organization', async () => {
    const invited = await service.request('POST', '/api/auth/invite', {
      token: service.adminToken,
      json: { email: 'guest.person@example.test', organizationName: 'acme' },
    });
    expect(invited.status).toBe(201);
    const link = new URL(invited.body.invitation_link as string);
    expect(link.pathname).toBe('/console/sign-up');
    const form = await get(`${link.pathname}${link.search}`);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-security-policy')).toContain(STRICT_CSP);
    expect(form.text).toContain('invited to <strong>acme</strong>');
    const token = link.searchParams.get('invitationToken')!;
    expect(form.text).toContain(`name="invitation_token" value="${token}"`);
    const submit = (fields: Record<string, string>, origin = service.url) =>
      fetch(`${service.url}/console/sign-up`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
        body: new URLSearchParams(fields),
      });
    // A weak password: the form again with the rule broken, nothing made; another site's form: refused.
    const weak = await submit({ username: 'guest1', email: 'guest.person@example.test', password: 'short', invitation_token: token });
    expect(weak.status).toBe(422);
    expect(await weak.text()).toContain('password rules');
    expect(
      (await submit({ username: 'guest1', email: 'guest.person@example.test', password: USER_PASSWORD, invitation_token: token }, 'https://evil.example'))
        .status,
    ).toBe(403);
    const made = await submit({ username: 'guest1', email: 'guest.person@example.test', password: USER_PASSWORD, invitation_token: token });
    expect(made.status).toBe(303);
    expect(made.headers.get('location')).toBe('/acme');
    const cookie = cookieOf(made);
    expect((await get('/acme/boxes/secret-box', cookie)).status).toBe(200); // a member now
    // The token is used up: the page says why, no second account.
    const again = await submit({ username: 'guest2', email: 'guest.person@example.test', password: USER_PASSWORD, invitation_token: token });
    expect(again.status).toBe(422);
    expect((await service.request('POST', '/api/auth/signin', { json: { username: 'guest2', password: USER_PASSWORD } })).status).toBe(401);
  });

  it('lists the public boxes for anyone, searchable, under a strict CSP', async () => {
    const home = await get('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toContain('text/html');
    expect(home.headers.get('content-security-policy')).toContain(STRICT_CSP);
    expect(home.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(home.text).toContain('href="/acme/boxes/ubuntu"');
    expect(home.text).not.toContain('secret-box');
    expect(home.text).not.toMatch(/<script>(?!<\/script>)/);
    expect(home.text).not.toContain('<style');
    expect((await get('/?q=ubu')).text).toContain('/acme/boxes/ubuntu');
    expect((await get('/?q=nothing-like-this')).text).toContain('No boxes here yet.');
  });

  it('shows a box with its versions, files, sha256 and the lines to use it; user text is escaped', async () => {
    const page = await get('/acme/boxes/ubuntu');
    expect(page.status).toBe(200);
    expect(page.text).toContain('v1.2.3');
    expect(page.text).toContain(boxSha);
    expect(page.text).toContain(`VAGRANT_SERVER_URL=${service.url} vagrant box add acme/ubuntu`);
    expect(page.text).toContain('config.vm.box = &quot;acme/ubuntu&quot;');
    expect(page.text).toContain(`config.vm.box_url = &quot;${service.url}/api/organization/acme/box/ubuntu/metadata&quot;`);
    expect(page.text).toContain('Ubuntu &lt;script&gt;alert(1)&lt;/script&gt; base box');
    expect(page.text).not.toContain('<script>alert(1)');
    // Anonymous visitors get no management forms.
    expect(page.text).not.toContain('data-method=');
  });

  it("pages a box's versions, newest first, 25 a page, by keyset links (older_than); a bad older_than is a 400 page", async () => {
    const path = { org: 'acme', box: 'many', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, service.adminToken, path, { isPublic: true });
    // 30 versions in an order unlike their version order: 1.0.0 … 1.0.29, with 1.0.10 sorting after 1.0.9.
    for (let i = 1; i < 30; i++) {
      const created = await service.request('POST', '/api/organization/acme/box/many/version', {
        token: service.adminToken,
        json: { versionNumber: `1.0.${(i * 7) % 30}`, status: 'active' },
      });
      expect([201, 409]).toContain(created.status);
    }
    const shown = (text: string) => [...text.matchAll(/<h3 id="v-\d+">v([^<]+)<\/h3>/g)].map((m) => m[1]);
    const first = await get('/acme/boxes/many');
    expect(first.status).toBe(200);
    expect(shown(first.text)).toEqual(Array.from({ length: 25 }, (_, i) => `1.0.${29 - i}`));
    const next = /href="([^"]+)" rel="next">Older versions/.exec(first.text)?.[1];
    expect(next).toBe('/acme/boxes/many?older_than=1.0.5');
    const second = await get(next!.replaceAll('&amp;', '&'));
    expect(shown(second.text)).toEqual(['1.0.4', '1.0.3', '1.0.2', '1.0.1', '1.0.0']);
    expect(second.text).not.toContain('Older versions');
    expect(second.text).toContain('href="/acme/boxes/many">Newest versions');
    const bad = await get('/acme/boxes/many?older_than=%3Cscript%3E');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('older_than must be a RubyGems-style version');
    expect(bad.text).not.toContain('<script>');
  });

  it('pages box lists by keyset (after=<org>/<box>) on the home search and an organization page; a bad after is a 400 page', async () => {
    await createOrganization(service, 'lots');
    const names = Array.from({ length: 55 }, (_, i) => `b${String(i).padStart(2, '0')}`);
    for (const name of names) {
      expect((await service.request('POST', '/api/organization/lots/box', { token: service.adminToken, json: { name, isPublic: true } })).status).toBe(201);
    }
    const listed = (text: string) => [...text.matchAll(/href="\/lots\/boxes\/([^"]+)"/g)].map((m) => m[1]);
    const first = await get('/lots');
    expect(listed(first.text)).toEqual(names.slice(0, 50));
    const next = /href="([^"]+)" rel="next">Next/.exec(first.text)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toBe('/lots?after=lots%2Fb49');
    const second = await get(next!);
    expect(listed(second.text)).toEqual(names.slice(50));
    expect(second.text).not.toContain('rel="next"');
    expect(second.text).toContain('href="/lots">First page');
    // The home page's search pages the same way, the query kept in the links.
    const searched = await get('/?q=b');
    const searchNext = /href="([^"]+)" rel="next">Next/.exec(searched.text)?.[1]?.replaceAll('&amp;', '&');
    expect(searchNext).toMatch(/^\/\?q=b&after=/);
    expect(listed((await get(searchNext!)).text).length).toBeGreaterThan(0);
    const bad = await get('/lots?after=nothing-here');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('after must be &lt;organization&gt;/&lt;box&gt;');
  });

  it('shows those who may change a box how CI publishes into it: vagrant cloud publish and a Packer post-processor', async () => {
    const page = await service.request('GET', '/acme/boxes/ubuntu', { token: service.adminToken });
    expect(page.text).toContain(
      `VAGRANT_SERVER_URL=${service.url} VAGRANT_CLOUD_TOKEN=&lt;key&gt; vagrant cloud publish acme/ubuntu 1.0.0 virtualbox package.box --release -f`,
    );
    expect(page.text).toContain('box_tag           = &quot;acme/ubuntu&quot;');
    expect(page.text).toContain(`vagrant_cloud_url = &quot;${service.url}/api/v1&quot;`);
    expect((await get('/acme/boxes/ubuntu')).text).not.toContain('vagrant cloud publish');
  });

  it('keeps the Vagrant paths answering JSON next to the pages', async () => {
    const metadata = await service.request('GET', '/acme/ubuntu', { headers: { accept: 'application/json' } });
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get('content-type')).toContain('application/json');
    expect(metadata.body.versions[0].providers[0].checksum).toBe(boxSha);
    expect((await service.request('GET', '/api/organization/acme/box')).headers.get('content-type')).toContain('application/json');
    // Tools that accept anything get the metadata too; a browser asking for HTML is sent to the box's page.
    expect((await service.request('GET', '/acme/ubuntu', { headers: { accept: '*/*' } })).body.name).toBe('acme/ubuntu');
    const browser = await fetch(`${service.url}/acme/ubuntu`, {
      redirect: 'manual',
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
    });
    expect(browser.status).toBe(303);
    expect(browser.headers.get('location')).toBe('/acme/boxes/ubuntu');
  });

  it('shows a private box to members only: 401 page for anonymous visitors, 404 for non-members (as if missing)', async () => {
    const anonymous = await get('/acme/boxes/secret-box');
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).toContain('Sign in required');
    expect(anonymous.text).not.toContain('internal only');
    const outsider = await get('/acme/boxes/secret-box', outsiderCookie);
    expect(outsider.status).toBe(404);
    expect(outsider.text).not.toContain('internal only');
    expect((await get('/', outsiderCookie)).text).not.toContain('secret-box');
    expect((await get('/acme', outsiderCookie)).text).not.toContain('secret-box');
    const member = await get('/acme/boxes/secret-box', memberCookie);
    expect(member.status).toBe(200);
    expect(member.text).toContain('internal only');
    expect((await get('/', memberCookie)).text).toContain('/acme/boxes/secret-box');
    expect((await get('/acme', memberCookie)).text).toContain('Members');
  });

  it('signs in with a form: HttpOnly, SameSite=Strict cookie (not Secure over plain HTTP), a safe redirect', async () => {
    const signedIn = await formSignIn('member1', USER_PASSWORD, '/acme');
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/acme');
    const setCookie = signedIn.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^box_session=/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).not.toContain('Secure');
    // Never a redirect off the site.
    expect((await formSignIn('member1', USER_PASSWORD, '//evil.example/x')).headers.get('location')).toBe('/');
    expect((await formSignIn('member1', USER_PASSWORD, '/\\evil.example/x')).headers.get('location')).toBe('/');
    expect((await formSignIn('member1', USER_PASSWORD, 'https://evil.example/')).headers.get('location')).toBe('/');
    // Characters beyond Latin-1 are percent-encoded into the Location header (was: a 500 after signing in).
    const unicode = await formSignIn('member1', USER_PASSWORD, '/acme?q=日本€');
    expect(unicode.status).toBe(303);
    expect(unicode.headers.get('location')).toBe('/acme?q=%E6%97%A5%E6%9C%AC%E2%82%AC');
    // A header-splitting attempt is a plain redirect home, not a 500.
    const splitting = await formSignIn('member1', USER_PASSWORD, '/x\r\nset-cookie: a=b');
    expect(splitting.status).toBe(303);
    expect(splitting.headers.get('location')).toBe('/');
    const wrong = await formSignIn('member1', 'wrong-password');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Invalid username or password.');
    expect(wrong.headers.get('set-cookie')).toBeNull();
    // Another site's page can't sign a visitor in (login CSRF).
    const foreign = await fetch(`${service.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: new URLSearchParams({ username: 'member1', password: USER_PASSWORD }),
    });
    expect(foreign.status).toBe(403);
  });

  it('accepts API writes with the cookie from the own origin only', async () => {
    const create = (headers: Record<string, string>, name: string) =>
      service.request('POST', '/api/organization/acme/box', { headers: { cookie: memberCookie, ...headers }, json: { name } });
    expect((await create({ origin: 'https://evil.example' }, 'from-evil')).status).toBe(403);
    expect((await create({ 'sec-fetch-site': 'cross-site' }, 'from-evil-2')).status).toBe(403);
    const own = await create({ origin: service.url }, 'from-console');
    expect(own.status).toBe(201);
    expect(own.body.user_id).not.toBeNull();
    // Reading with the cookie needs no Origin.
    expect((await service.request('GET', '/api/user', { headers: { cookie: memberCookie } })).body.username).toBe('member1');
  });

  it('signs out: the cookie is cleared and its session refused from then on', async () => {
    const cookie = cookieOf(await formSignIn('member1', USER_PASSWORD));
    expect((await get('/acme/boxes/secret-box', cookie)).status).toBe(200);
    const out = await fetch(`${service.url}/console/sign-out`, { method: 'POST', redirect: 'manual', headers: { cookie, origin: service.url } });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/box_session=;/);
    // The old cookie counts as no credentials (a stale cookie must not lock the visitor out of public pages).
    expect((await get('/acme/boxes/secret-box', cookie)).status).toBe(401);
    expect((await get('/', cookie)).status).toBe(200);
  });

  it('shows the users page to admins only, and HTML error pages for unknown items', async () => {
    expect((await get('/console/users')).status).toBe(401);
    expect((await get('/console/users', memberCookie)).status).toBe(403);
    const admin = cookieOf(await formSignIn('admin', (await import('../testing/test-service.ts')).ADMIN_PASSWORD));
    const users = await get('/console/users', admin);
    expect(users.status).toBe(200);
    expect(users.text).toContain('member1');
    expect(users.text).toContain('acme (user)');
    // Signed in: unknown items are 404 pages. Anonymous visitors are asked to sign in (a private one looks the same).
    const missing = await get('/no-such-org', memberCookie);
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('Not found');
    expect((await get('/acme/boxes/no-such-box', memberCookie)).status).toBe(404);
    expect((await get('/no-such-org')).status).toBe(401);
  });

  it('marks the cookie Secure when the service is reached over HTTPS (here through a trusted proxy)', async () => {
    const proxied = await startTestService({ config: { server: { trust_proxy: ['127.0.0.1'] } } });
    try {
      const origin = proxied.url.replace(/^http:/, 'https:');
      const response = await fetch(`${proxied.url}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https', origin },
        body: new URLSearchParams({ username: 'admin', password: (await import('../testing/test-service.ts')).ADMIN_PASSWORD }),
      });
      expect(response.status).toBe(303);
      expect(response.headers.get('set-cookie')).toMatch(/; Secure/);
      expect(response.headers.get('set-cookie')).toContain('HttpOnly');
    } finally {
      await proxied.close();
    }
  });

  it('shows admins the webhooks with their latest deliveries', async () => {
    const admin = cookieOf(await formSignIn('admin', (await import('../testing/test-service.ts')).ADMIN_PASSWORD));
    const created = await service.request('POST', '/api/admin/webhooks', {
      token: service.adminToken,
      json: { url: 'https://hooks.example.invalid/boxes', events: ['box.deleted'], description: 'CI <hook>' },
    });
    expect(created.status).toBe(201);
    const [event] = await service.sql<{ id: string }>(
      `insert into events (type, data, delivered_at) values ('box.deleted', '{"organization": "acme", "box": "gone"}', now()) returning id`,
    );
    await service.sql(
      `insert into webhook_deliveries (webhook_id, event_id, status, attempts, last_status_code, finished_at) values ($1, $2, 'failed', 8, 502, now())`,
      [created.body.id, event!.id],
    );
    const page = await get('/console/webhooks', admin);
    expect(page.status).toBe(200);
    expect(page.text).toContain('https://hooks.example.invalid/boxes');
    expect(page.text).toContain('CI &lt;hook&gt;');
    expect(page.text).toMatch(/box\.deleted<\/td><td><span class="badge warn">failed<\/span><\/td><td>8<\/td>\s*<td>502<\/td>/);
    expect(page.text).toContain(`/api/admin/webhooks/${created.body.id}/deliveries/`);
    expect(page.text).not.toContain(created.body.secret);
    expect((await get('/console/webhooks', memberCookie)).status).toBe(403);
    expect((await get('/console/webhooks')).status).toBe(401);
  });

  it('serves its two assets with their types, and nothing else', async () => {
    const css = await get('/console/assets/console.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toContain('text/css');
    const js = await get('/console/assets/console.js');
    expect(js.headers.get('content-type')).toContain('text/javascript');
    expect((await get('/console/assets/..%2Fpages.ts')).status).toBe(404);
    expect((await get('/console/assets/routes.ts')).status).toBe(404);
  });
});
