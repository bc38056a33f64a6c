// An identity provider's access tokens on every service (issue 10): a real OpenID provider (oidc-provider) issues
// DPoP-bound RFC 9068 tokens; the box repository, the file share (two replicas on one database) and the terminal
// (REST and the WebSocket upgrade) accept them with a fresh proof, refuse a replayed proof (also on the other
// replica) and a bound token sent as Bearer, and map the provider's groups: admin, organization membership,
// file permissions.
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '@boxyard/box-repository/testing/test-service.ts';
import { startTestShare, type TestShare } from '@boxyard/file-share/testing/test-share.ts';
import { startTestGateway } from '@boxyard/terminal/testing/test-gateway.ts';
import { createTestDatabase } from '../harness/fixtures.ts';
import { dpopProof, newDpopKey, startOidcProvider, type DpopKey, type RunningOidcProvider, type TestClient } from '../harness/oidc-provider.ts';

const audiences = { boxes: 'https://boxes.example.test', files: 'https://files.example.test', shells: 'https://shells.example.test' };
const client = (login: string, groups: string[]): TestClient => ({
  client_id: `${login}-cli`,
  client_secret: randomBytes(18).toString('base64url'),
  actsAs: { login, groups },
});
const alice = client('alice', ['acme-devs']);
const root = client('root', ['boxyard-admins', 'file-admins']);
const boss = client('boss', ['boxyard-admins']);
const gone = client('gone', []);

const resourceServer = (issuer: string, audience: string) => ({
  auth: { resource_server: { enabled: true, issuer, audience, admin_groups: ['boxyard-admins'] } },
});

/** A request with a provider token: DPoP with a fresh proof for exactly this method and URL, or Bearer. */
async function withToken(token: string, method: string, url: string, key?: DpopKey, proof?: string): Promise<Record<string, string>> {
  if (!key) return { authorization: `Bearer ${token}` };
  const htu = url.split('?')[0]!.replace(/^ws/, 'http');
  return { authorization: `DPoP ${token}`, dpop: proof ?? (await dpopProof(key, { htm: method, htu, accessToken: token })) };
}

describe('identity provider tokens on every service', () => {
  let idp: RunningOidcProvider;
  let boxes: TestService;
  let share: TestShare;
  let shareReplica: TestShare;
  let shells: Awaited<ReturnType<typeof startTestGateway>>;
  let key: DpopKey;

  beforeAll(async () => {
    idp = await startOidcProvider({ resources: Object.values(audiences), clients: [alice, root, boss, gone] });
    [boxes, share, shells] = await Promise.all([
      startTestService({
        config: {
          ...resourceServer(idp.issuer, audiences.boxes),
          group_mapping: { organizations: [{ group: 'acme-devs', organization: 'acme', role: 'moderator' }] },
        },
      }),
      startTestShare({
        storage: 'local',
        overrides: {
          ...resourceServer(idp.issuer, audiences.files),
          group_mapping: {
            permissions: [{ group: 'file-admins', permissions: ['downloads', 'uploads', 'delete'] }],
            default_permissions: ['downloads', 'uploads'],
          },
        },
      }),
      // A local account named like the provider's alice is mapped to an OS account: the provider's alice must not get it.
      createTestDatabase('idp_term').then((url) =>
        startTestGateway(url, { ...resourceServer(idp.issuer, audiences.shells), backend: { local: { accounts: { map: { alice: 'nobody' } } } } }),
      ),
    ]);
    shareReplica = await startTestShare({
      storage: 'local',
      databaseUrl: share.databaseUrl,
      localRoot: share.localRoot!,
      overrides: { ...resourceServer(idp.issuer, audiences.files), session: { secret: share.config.session.secret } },
    });
    key = await newDpopKey();
    expect((await boxes.request('POST', '/api/organization', { token: boxes.adminToken, json: { name: 'acme' } })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled([boxes?.close(), share?.close(), shareReplica?.close(), shells?.close(), idp?.stop()]);
  });

  it('box repository: a DPoP-bound token with a fresh proof signs alice in, with the membership her group grants', async () => {
    const token = await idp.token({ resource: audiences.boxes, dpop: key, client: alice });
    const url = `${boxes.url}/api/user/profile`;
    const profile = await fetch(url, { headers: await withToken(token, 'GET', url, key) });
    expect(profile.status, await profile.clone().text()).toBe(200);
    expect(await profile.json()).toMatchObject({ username: 'alice', organizations: [{ name: 'acme', role: 'moderator' }] });

    // The same proof again: a replay.
    const proof = await dpopProof(key, { htm: 'GET', htu: url, accessToken: token });
    expect((await fetch(url, { headers: await withToken(token, 'GET', url, key, proof) })).status).toBe(200);
    const replayed = await fetch(url, { headers: await withToken(token, 'GET', url, key, proof) });
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get('www-authenticate')).toMatch(/^DPoP .*error="invalid_dpop_proof"/);

    // The bound token without its proof (what a thief holding only the token would send).
    const downgraded = await fetch(url, { headers: await withToken(token, 'GET', url) });
    expect(downgraded.status).toBe(401);
    expect(downgraded.headers.get('www-authenticate')).toMatch(/Bearer .*error="invalid_token"/);
    expect(await downgraded.json()).toMatchObject({ type: 'https://boxyard.io/problems/authentication', status: 401 });

    // A proof for another method is refused; the session JWT and anonymous access still work as before.
    const wrongMethod = await fetch(url, {
      headers: await withToken(token, 'GET', url, key, await dpopProof(key, { htm: 'POST', htu: url, accessToken: token })),
    });
    expect(wrongMethod.status).toBe(401);
    expect((await boxes.request('GET', '/api/user/profile', { token: boxes.adminToken })).status).toBe(200);
    const anonymous = await fetch(url);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/DPoP algs="/);
  });

  it('box repository: an admin group makes an admin; a token for another audience is refused', async () => {
    const token = await idp.token({ resource: audiences.boxes, client: root });
    const url = `${boxes.url}/api/user/profile`;
    const profile = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    expect(profile.status, await profile.clone().text()).toBe(200);
    expect(((await profile.json()) as { roles: string[] }).roles).toContain('admin');
    const forFiles = await idp.token({ resource: audiences.files, client: root });
    const refused = await fetch(url, { headers: { authorization: `Bearer ${forFiles}` } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('box repository: a disabled provider admin is refused at once; a deleted provider user does not come back', async () => {
    const profileUrl = `${boxes.url}/api/user/profile`;
    const asBoss = async () => fetch(profileUrl, { headers: { authorization: `Bearer ${await idp.token({ resource: audiences.boxes, client: boss })}` } });
    const first = await asBoss();
    expect(first.status, await first.clone().text()).toBe(200);
    expect(((await first.json()) as { roles: string[] }).roles).toContain('admin');
    expect((await boxes.request('PATCH', '/api/admin/users/boss', { token: boxes.adminToken, json: { disabled: true } })).status).toBe(200);
    // Refused in the problem shape on every route, although the provider still vouches for boss.
    const refused = await asBoss();
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    expect(await refused.json()).toMatchObject({ status: 401, detail: expect.stringContaining('disabled') });
    const adminOnly = await fetch(`${boxes.url}/api/admin/users`, {
      headers: { authorization: `Bearer ${await idp.token({ resource: audiences.boxes, client: boss })}` },
    });
    expect(adminOnly.status).toBe(401);

    const asGone = async () => fetch(profileUrl, { headers: { authorization: `Bearer ${await idp.token({ resource: audiences.boxes, client: gone })}` } });
    expect((await asGone()).status).toBe(200);
    expect((await boxes.request('DELETE', '/api/admin/users/gone', { token: boxes.adminToken })).status).toBe(200);
    const afterDelete = await asGone();
    expect(afterDelete.status).toBe(401);
    expect(await afterDelete.json()).toMatchObject({ status: 401, detail: expect.stringContaining('deleted') });
    expect((await boxes.request('GET', '/api/admin/users/gone', { token: boxes.adminToken })).status).toBe(404);
  });

  it('file share: permissions follow the groups; a proof used on one replica is refused on the other', async () => {
    const aliceToken = await idp.token({ resource: audiences.files, dpop: key, client: alice });
    const form = () => {
      const body = new FormData();
      body.append('file', new Blob(['from alice\n']), 'alice.txt');
      return body;
    };
    const fileUrl = `${share.url}/alice.txt`;
    const uploaded = await fetch(fileUrl, { method: 'POST', headers: await withToken(aliceToken, 'POST', fileUrl, key), body: form() });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    // Alice's groups grant no delete (the default permissions apply).
    const denied = await fetch(fileUrl, { method: 'DELETE', headers: await withToken(aliceToken, 'DELETE', fileUrl, key) });
    expect(denied.status).toBe(403);

    // One proof, two replicas of the same share: only the first use counts. The replica's public URL differs
    // (its own port), so the proof names the replica's URL and is first used there.
    const replicaUrl = `${shareReplica.url}/alice.txt`;
    const proof = await dpopProof(key, { htm: 'GET', htu: replicaUrl, accessToken: aliceToken });
    expect((await fetch(replicaUrl, { headers: await withToken(aliceToken, 'GET', replicaUrl, key, proof) })).status).toBe(200);
    expect((await fetch(replicaUrl, { headers: await withToken(aliceToken, 'GET', replicaUrl, key, proof) })).status).toBe(401);
    // The same jti under the first replica's URL: refused because the jti is known to the shared database.
    const sameJti = await dpopProof(key, {
      htm: 'GET',
      htu: fileUrl,
      accessToken: aliceToken,
      jti: JSON.parse(Buffer.from(proof.split('.')[1]!, 'base64url').toString()).jti,
    });
    const replayed = await fetch(fileUrl, { headers: await withToken(aliceToken, 'GET', fileUrl, key, sameJti) });
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get('www-authenticate')).toMatch(/invalid_dpop_proof/);

    // The file-admins group grants delete.
    const rootToken = await idp.token({ resource: audiences.files, client: root });
    expect((await fetch(fileUrl, { method: 'DELETE', headers: { authorization: `Bearer ${rootToken}` } })).status).toBe(200);
  });

  it('terminal: REST and the WebSocket upgrade accept the token with a fresh proof each', async () => {
    const token = await idp.token({ resource: audiences.shells, dpop: key, client: alice });
    const statusUrl = `${shells.url}/auth/status`;
    const status = await fetch(statusUrl, { headers: await withToken(token, 'GET', statusUrl, key) });
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({ data: { user: { username: 'alice' }, presented_in: 'authorization', cookie: 'auth_token' } });

    const startUrl = `${shells.url}/api/terminal/start`;
    const started = await fetch(startUrl, {
      method: 'POST',
      headers: { ...(await withToken(token, 'POST', startUrl, key)), 'content-type': 'application/json' },
      body: JSON.stringify({ terminal_cookie: 'idp-test' }),
    });
    expect(started.status, await started.clone().text()).toBe(200);
    const { data } = (await started.json()) as { data: { websocket_path: string } };
    const wsUrl = `${shells.url.replace(/^http/, 'ws')}${data.websocket_path}`;
    const socket = new WebSocket(wsUrl, { headers: await withToken(token, 'GET', wsUrl, key) });
    let output = '';
    socket.on('message', (m, binary) => binary && (output += m.toString()));
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('unexpected-response', (_q, r) => reject(new Error(`upgrade refused: ${r.statusCode}`)));
    });
    socket.send(Buffer.from('echo $((6*7))\n'), { binary: true });
    await expect.poll(() => output, { timeout: 15_000 }).toContain('42');
    // Her shell is not the OS account the map gives the username alice: a provider chose that name, not this server.
    socket.send(Buffer.from('echo "U-$(id -un)-U"\n'), { binary: true });
    await expect.poll(() => /U-([a-z0-9_.-]+)-U/.exec(output)?.[1], { timeout: 15_000 }).toBeDefined();
    const account = /U-([a-z0-9_.-]+)-U/.exec(output)![1];
    expect(account).not.toBe('nobody');
    expect(account).toMatch(/^bxt[0-9a-f]{6}-/); // the account created for her user id
    socket.close();

    // Without a proof the upgrade is refused.
    const refused = new WebSocket(wsUrl, { headers: { authorization: `DPoP ${token}` } });
    const code = await new Promise<number>((resolve) => {
      refused.once('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0));
      refused.once('open', () => resolve(101));
      refused.once('error', () => resolve(0));
    });
    expect(code).toBe(401);
  });
});
