// Invitations (mailed through a real SMTP server on loopback), sign-up with invitationToken, user.created, and the
// SMTP test route.
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { startTestSmtpServer, type TestSmtpServer } from '@boxyard/kit/mail/test-smtp-server.ts';
import { createHmac } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addMember, createOrganization, startTestService, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

let smtp: TestSmtpServer;
let service: TestService;
let moderator: string;

beforeAll(async () => {
  smtp = await startTestSmtpServer({ auth: { user: 'boxyard', pass: 'Smtp-Secret-1' } });
  service = await startTestService({
    config: {
      mail: { smtp: { host: smtp.host, port: smtp.port, auth: { user: 'boxyard', pass: 'Smtp-Secret-1' }, from: 'Boxyard <boxes@example.test>' } },
      // The webhook worker delivers user.created to a receiver on loopback (allowed here only).
      webhooks: { poll_interval_seconds: 0.05, backoff_initial_seconds: 0.05, backoff_max_seconds: 0.2, timeout_seconds: 1, allow_private_targets: true },
    },
  });
  await createOrganization(service, 'acme');
  await createOrganization(service, 'other');
  moderator = (await service.createUser('acme-mod')).token;
  await addMember(service, 'acme', 'acme-mod', 'moderator');
});
afterAll(async () => {
  await service?.close();
  await smtp?.close();
});

const invite = (token: string | undefined, email: string, organizationName = 'acme') =>
  service.request('POST', '/api/auth/invite', { ...(token ? { token } : {}), json: { email, organizationName } });
const signUp = (username: string, email: string, invitationToken?: string) =>
  service.request('POST', '/api/auth/signup', {
    json: { username, email, password: USER_PASSWORD, ...(invitationToken !== undefined ? { invitationToken } : {}) },
  });

describe('invitations', () => {
  it('a moderator invites; the link is mailed; signing up with its token joins the organization, once', async () => {
    const created = await invite(moderator, 'new.person@example.test');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      email: 'new.person@example.test',
      organization: 'acme',
      mail_sent: true,
      invitation_token: expect.stringMatching(/^bxy_inv_/),
    });
    const link = new URL(created.body.invitation_link);
    expect(link.searchParams.get('invitationToken')).toBe(created.body.invitation_token);
    expect(link.searchParams.get('organization')).toBe('acme');
    // The default lifetime: 7 days from now (checked against the server's own clock through the database).
    const [row] = await service.sql<{ seconds: number }>(
      `select extract(epoch from expires_at - created_at)::int as seconds from invitations order by id desc limit 1`,
    );
    expect(row!.seconds).toBe(7 * 86_400);
    expect(
      Math.abs(
        created.body.invitation_token_expires -
          Date.parse((await service.sql<{ e: Date }>('select expires_at as e from invitations order by id desc limit 1'))[0]!.e.toISOString()),
      ),
    ).toBeLessThanOrEqual(1);

    const mail = await smtp.waitFor((m) => m.to.includes('new.person@example.test'));
    expect(mail.from).toBe('boxes@example.test');
    expect(mail.user).toBe('boxyard');
    expect(mail.text).toContain(created.body.invitation_link);

    const joined = await signUp('new-person', 'New.Person@example.test', created.body.invitation_token);
    expect(joined.status).toBe(201);
    expect(joined.body.message).toContain("joined 'acme'");
    const token = await service.signIn('new-person', USER_PASSWORD);
    expect((await service.request('GET', '/api/user', { token })).body.organizations).toEqual([{ name: 'acme', role: 'user' }]);
    const events = await service.sql<{ data: { username: string } }>(`select data from events where type = 'user.created' order by id`);
    expect(events.map((e) => e.data)).toContainEqual({ username: 'new-person' });

    const reused = await signUp('someone-else', 'new.person@example.test', created.body.invitation_token);
    expect(reused.status).toBe(422);
    expect(reused.body.errors[0]).toMatchObject({ pointer: '/invitation_token', rule: 'used' });
    expect(
      (await service.request('GET', '/api/organization/acme/members', { token: moderator })).body.map((m: { username: string }) => m.username),
    ).not.toContain('someone-else');
  });

  it("refuses an expired, unknown or someone else's invitation, and creates no account", async () => {
    const created = (await invite(moderator, 'late@example.test')).body;
    await service.sql(`update invitations set expires_at = now() - interval '1 second' where email = 'late@example.test'`);
    const expired = await signUp('late', 'late@example.test', created.invitation_token);
    expect(expired.status).toBe(422);
    expect(expired.body.errors[0].rule).toBe('expired');
    expect((await signUp('guess', 'guess@example.test', 'bxy_inv_guessed')).body.errors[0].rule).toBe('invalid');
    const forOther = (await invite(moderator, 'intended@example.test')).body;
    expect((await signUp('intruder', 'intruder@example.test', forOther.invitation_token)).body.errors[0].rule).toBe('email_mismatch');
    expect(await service.sql(`select 1 from users where username in ('late', 'guess', 'intruder')`)).toEqual([]);
    // And the invitation still works for its invitee.
    expect((await signUp('intended', 'intended@example.test', forOther.invitation_token)).status).toBe(201);
  });

  it('only moderators and admins of that organization (or global admins) invite', async () => {
    const member = (await service.createUser('plain-member')).token;
    await addMember(service, 'acme', 'plain-member', 'user');
    const otherModerator = (await service.createUser('other-mod')).token;
    await addMember(service, 'other', 'other-mod', 'moderator');
    expect((await invite(undefined, 'x@example.test')).status).toBe(401);
    expect((await invite(member, 'x@example.test')).status).toBe(403);
    expect((await invite(otherModerator, 'x@example.test')).status).toBe(403);
    expect((await invite(otherModerator, 'x@example.test', 'other')).status).toBe(201);
    expect((await invite(service.adminToken, 'x@example.test')).status).toBe(201);
    expect((await invite(moderator, 'x@example.test', 'nowhere')).status).toBe(404);
    expect((await invite(moderator, 'not-an-address')).status).toBe(422);
  });

  it('plain sign-up records user.created too, and a webhook receives it signed', async () => {
    const bodies: { body: string; signature: string }[] = [];
    const receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        bodies.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(request.headers['x-boxyard-signature']) });
        response.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const webhook = await service.request('POST', '/api/admin/webhooks', { token: service.adminToken, json: { url, events: ['user.created'] } });
      expect(webhook.status, webhook.text).toBe(201);
      expect((await signUp('plain-signup', 'plain-signup@example.test')).status).toBe(201);
      expect(await service.sql(`select data from events where type = 'user.created' and data->>'username' = 'plain-signup'`)).toHaveLength(1);
      const delivered = await vi.waitFor(
        () => {
          const found = bodies.find((b) => b.body.includes('"plain-signup"'));
          if (!found) throw new Error('not delivered yet');
          return found;
        },
        { timeout: 20_000, interval: 50 },
      );
      expect(JSON.parse(delivered.body)).toEqual({ event: 'user.created', data: { username: 'plain-signup' } });
      expect(delivered.signature).toBe(
        `sha256=${createHmac('sha256', webhook.body.secret as string)
          .update(delivered.body)
          .digest('hex')}`,
      );
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

/** POST with a Host header of the caller's choosing (fetch sets its own): as any client may. */
function postWithHost(path: string, token: string, json: unknown, host: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const target = new URL(path, service.url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(target, { method: 'POST', headers: { host, 'x-access-token': token, 'content-type': 'application/json' } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
    });
    request.on('error', reject);
    request.end(JSON.stringify(json));
  });
}

describe('invitation links', () => {
  it("are built from the service's own address, never from the Host header the client sent (was: from Host)", async () => {
    const created = await postWithHost('/api/auth/invite', moderator, { email: 'host.header@example.test', organizationName: 'acme' }, 'evil.example');
    expect(created.status).toBe(201);
    const link = new URL(created.body.invitation_link as string);
    expect(link.origin).toBe(new URL(service.url).origin);
    const mail = await smtp.waitFor((m) => m.to.includes('host.header@example.test'));
    expect(mail.text).toContain(created.body.invitation_link);
    expect(mail.text).not.toContain('evil.example');
  });

  it('need server.public_url when the service listens on every address: 409 naming it, nothing made', async () => {
    const everywhere = await startTestService({ config: { server: { host: '0.0.0.0', port: 0 } } });
    try {
      await createOrganization(everywhere, 'wide');
      const refused = await everywhere.request('POST', '/api/auth/invite', {
        token: everywhere.adminToken,
        json: { email: 'x@example.test', organizationName: 'wide' },
      });
      expect(refused.status).toBe(409);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.body).toMatchObject({ status: 409, detail: expect.stringContaining('server.public_url') });
      expect(await everywhere.sql('select 1 from invitations')).toEqual([]);
    } finally {
      await everywhere.close();
    }
    // With a public URL (here one naming the listener by `localhost`), the link is built on it.
    const port = await freePort();
    const configured = await startTestService({ port, config: { server: { host: '0.0.0.0', public_url: `http://localhost:${port}/` } } });
    try {
      await createOrganization(configured, 'wide');
      const created = await configured.request('POST', '/api/auth/invite', {
        token: configured.adminToken,
        json: { email: 'x@example.test', organizationName: 'wide' },
      });
      expect(created.status).toBe(201);
      expect(created.body.invitation_link).toMatch(new RegExp(`^http://localhost:${port}/console/sign-up\\?invitationToken=`));
    } finally {
      await configured.close();
    }
  });
});

describe('POST /api/mail/test-smtp', () => {
  const testSmtp = (token: string | undefined, json: Record<string, unknown>) =>
    service.request('POST', '/api/mail/test-smtp', { ...(token ? { token } : {}), json });

  it('sends a real test mail with the given settings', async () => {
    const sent = await testSmtp(service.adminToken, {
      host: smtp.host,
      port: smtp.port,
      secure: false,
      auth: { user: 'boxyard', pass: 'Smtp-Secret-1' },
      to: 'ops@example.test',
      from: 'setup@example.test',
    });
    expect(sent.status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes('ops@example.test'));
    expect(mail.raw).toMatch(/^Subject: Boxyard: SMTP test$/m);
    expect(mail.raw).toContain(sent.body.message_id);
  });

  it('fails with one and the same answer whatever went wrong, so it cannot tell open ports from closed ones (was: the reason: ECONNREFUSED, EPROTOCOL, ETIMEDOUT, EAUTH)', async () => {
    const settings = { to: 'ops@example.test', from: 'setup@example.test' };
    // Something listening that is not an SMTP server: it answers at once with another protocol's greeting, or
    // accepts and says nothing (the test then waits out the route's 15 s time-out).
    const speaker = createNetServer((socket) => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const silent = createNetServer(() => {});
    const sockets: Socket[] = [];
    silent.on('connection', (socket) => sockets.push(socket));
    await Promise.all([speaker, silent].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const portOf = (server: NetServer) => (server.address() as AddressInfo).port;
    try {
      // All at once: each failure is answered no sooner than the route's 15 s time-out, so timing tells nothing
      // either (not asserted: no wall-clock bounds in tests).
      const closedPort = await freePort();
      const failures = Object.fromEntries(
        await Promise.all(
          Object.entries({
            wrongPassword: { host: smtp.host, port: smtp.port, auth: { user: 'boxyard', pass: 'wrong' } },
            closedPort: { host: '127.0.0.1', port: closedPort },
            notSmtp: { host: '127.0.0.1', port: portOf(speaker) },
            silent: { host: '127.0.0.1', port: portOf(silent) },
          }).map(async ([name, target]) => [name, await testSmtp(service.adminToken, { ...target, ...settings })] as const),
        ),
      );
      const seen = Object.entries(failures).map(([name, response]) => {
        expect(response.headers.get('content-type'), name).toContain('application/problem+json');
        const { type, title, status, detail, errors } = response.body;
        return { type, title, status, detail, errors };
      });
      expect(seen[0]).toMatchObject({ status: 502, detail: expect.stringContaining('not delivered') });
      for (const answer of seen) expect(answer).toEqual(seen[0]);
      expect(JSON.stringify(seen[0])).not.toMatch(/ECONN|EAUTH|EPROTOCOL|ETIMEDOUT|ESOCKET|greeting|535|refused the connection/i);
    } finally {
      for (const socket of sockets) socket.destroy();
      await Promise.all([speaker, silent].map((server) => new Promise((resolve) => server.close(resolve))));
    }
  }, 90_000);

  it('is for global admins only, and checks its input', async () => {
    expect((await testSmtp(moderator, { host: smtp.host, port: smtp.port, to: 'ops@example.test', from: 'setup@example.test' })).status).toBe(403);
    expect((await testSmtp(undefined, { host: smtp.host, port: smtp.port, to: 'ops@example.test', from: 'setup@example.test' })).status).toBe(401);
    expect((await testSmtp(service.adminToken, { host: smtp.host, port: 70_000, to: 'ops@example.test', from: 'x@y.z' })).status).toBe(422);
  });
});
