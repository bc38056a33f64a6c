// Setup, status and the two listeners, on the run's PostgreSQL: the public status routes; an HTTPS listener
// beside an unencrypted one; the self-signed certificate kept across restarts; a certificate uploaded through
// /api/setup/upload-ssl served by the running listener (seen by a real TLS client) and by a second replica;
// the unencrypted listener redirecting once a real certificate is served.
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBoxRepository } from '../service.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';
import { ignoreError } from '@boxyard/kit';

/** The certificate a real TLS client is shown by host:port. */
function servedCertificate(url: string): Promise<X509Certificate> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), servername: 'localhost', rejectUnauthorized: false }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.end();
      if (peer) resolve(peer);
      else reject(new Error('no peer certificate'));
    });
    socket.once('error', reject);
  });
}

/** A GET over HTTPS that trusts exactly `ca` (the certificate must name localhost). */
function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  const { port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      { host: '127.0.0.1', port: Number(port), path: pathname, servername: 'localhost', ca, headers: { host: `localhost:${port}` } },
      (response) => {
        let body = '';
        response
          .setEncoding('utf8')
          .on('data', (chunk: string) => (body += chunk))
          .on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.once('error', reject).end();
  });
}

async function makePair(commonName: string, days = 30) {
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + days * 24 * 3600 * 1000),
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

const form = (parts: Record<string, string>, asFiles = true) => {
  const body = new FormData();
  for (const [name, value] of Object.entries(parts)) {
    if (asFiles) body.append(name, new Blob([value]), `${name}.pem`);
    else body.append(name, value);
  }
  return body;
};

describe('public status routes', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ config: { rate_limiting: { enabled: true, window_minutes: 10, download_max_requests: 50 } } });
  });
  afterAll(async () => service?.close());

  it('/api/status, /api/health, /api/rules, /api/discover answer anyone, with what a client needs', async () => {
    const status = await service.request('GET', '/api/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ service: 'box-repository', status: 'ok', https: false });
    expect(status.body.version).toMatch(/^\d+\.\d+\.\d+/);

    const health = await service.request('GET', '/api/health');
    expect(health.body).toEqual({ status: 'ok', checks: { database: 'ok', storage: 'ok' } });

    const rules = await service.request('GET', '/api/rules');
    expect(rules.body.password).toMatchObject({ min_length: 8, required: ['uppercase', 'lowercase', 'digit'], common_passwords_refused: true });
    expect(rules.body.naming.box.pattern).toBe('^[A-Za-z0-9_-]{1,100}$');
    // The configured limits, window given in minutes as the spec names it.
    expect(rules.body.limits.rate_limiting).toMatchObject({
      enabled: true,
      window_seconds: 600,
      max_requests: 1000,
      ceilings: { download_max_requests: 50, file_operations_max_requests: 100 },
    });
    // The rules published are the rules applied: a password /api/rules describes as too short is refused.
    const weak = await service.request('POST', '/api/auth/signup', { json: { username: 'weak', email: 'weak@example.test', password: 'Ab1' } });
    expect(weak.status).toBe(422);

    const discover = await service.request('GET', '/api/discover');
    expect(discover.body).toMatchObject({
      service: 'box-repository',
      base_url: service.url,
      openapi: '/openapi.json',
      auth: { session_header: 'x-access-token', provider: null },
    });
    expect(discover.body.auth.methods).toEqual(['password', 'session_token', 'service_account_key']);
  });

  it('/api/health says 503 when the database is away', async () => {
    const other = await startTestService();
    await other.running.ctx.pool.end();
    const health = await other.request('GET', '/api/health');
    expect(health.status).toBe(503);
    expect(health.body.checks.database).toBe('failing');
    await other.close().catch(ignoreError('teardown: already closed'));
  });

  it('setup status without HTTPS', async () => {
    const setup = await service.request('GET', '/api/setup/status');
    expect(setup.status).toBe(200);
    expect(setup.body).toEqual({
      admin_exists: true,
      https: false,
      certificate: null,
      redirects_to_https: false,
      listeners: { encrypted_port: null, unencrypted_port: Number(new URL(service.url).port) },
    });
  });
});

describe('two listeners, a kept self-signed certificate, and an uploaded one', () => {
  let stateDir: string;
  let databaseUrl: string;
  let service: TestService;
  let replica: TestService;
  const listenerConfig = () => ({ boxyard: { api_listen_port_encrypted: 0, api_listen_port_unencrypted: 0 } });

  beforeAll(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'boxrepo-state-'));
    service = await startTestService({ config: { ...listenerConfig(), state_dir: stateDir } as never });
    databaseUrl = service.databaseUrl;
    // Replicas share the session secret (it opens the stored key), as the operator gives them one.
    replica = await startTestService({
      databaseUrl,
      config: { ...listenerConfig(), state_dir: stateDir, session: { secret: service.config.session.secret } } as never,
    });
  });
  afterAll(async () => {
    await replica?.close();
    await service?.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('serves HTTPS with a self-signed certificate kept in state_dir (key 0600) that survives a restart', async () => {
    const https = service.running.url;
    expect(https).toMatch(/^https:/);
    const first = await servedCertificate(https);
    expect(first.subject).toContain('CN=127.0.0.1');
    const files = await readdir(stateDir);
    const keyFile = files.find((f) => f.endsWith('.key'))!;
    expect(((await stat(join(stateDir, keyFile))).mode & 0o777).toString(8)).toBe('600');
    // While only the self-signed certificate is there, the unencrypted listener serves the API itself.
    expect((await service.request('GET', '/api/status')).body).toMatchObject({ https: true });

    const again = await startTestService({ databaseUrl, config: { ...listenerConfig(), state_dir: stateDir } as never });
    try {
      expect((await servedCertificate(again.running.url)).fingerprint256).toBe(first.fingerprint256);
    } finally {
      await again.close();
    }
  });

  it('upload-ssl: admins only; refuses a key of another certificate, damaged PEM and missing parts with 422', async () => {
    const pair = await makePair('refused.test');
    const other = await makePair('other.test');
    const upload = (body: FormData, token?: string) => service.request('POST', '/api/setup/upload-ssl', { body, ...(token ? { token } : {}) });
    expect((await upload(form(pair))).status).toBe(401);
    const user = await service.createUser('plain');
    expect((await upload(form(pair), user.token)).status).toBe(403);
    const mismatch = await upload(form({ cert: pair.cert, key: other.key }), service.adminToken);
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.errors).toEqual([
      expect.objectContaining({ pointer: '/key', rule: 'key_pair', detail: 'the private key does not belong to the certificate' }),
    ]);
    const damaged = await upload(form({ cert: 'not a certificate', key: pair.key }), service.adminToken);
    expect(damaged.body.errors).toEqual([expect.objectContaining({ pointer: '/cert', rule: 'certificate' })]);
    const onlyCert = await upload(form({ cert: pair.cert }), service.adminToken);
    expect(onlyCert.status).toBe(422);
    expect(onlyCert.body.errors).toEqual([expect.objectContaining({ pointer: '/key', rule: 'required' })]);
    const extra = new FormData();
    extra.append('cert', pair.cert);
    extra.append('key', pair.key);
    extra.append('chain', pair.cert);
    expect((await upload(extra, service.adminToken)).status).toBe(422);
    expect((await service.request('POST', '/api/setup/upload-ssl', { token: service.adminToken, json: { cert: pair.cert, key: pair.key } })).status).toBe(415);
    // multipart/form-data without a boundary: the body cannot be read, 400 (was 500).
    expect(
      (await service.request('POST', '/api/setup/upload-ssl', { token: service.adminToken, headers: { 'content-type': 'multipart/form-data' }, body: 'x' }))
        .status,
    ).toBe(400);
    // Over 64 KiB, as a file or as a field: 413, never cut short and then judged.
    expect((await upload(form({ cert: pair.cert + ' '.repeat(70_000), key: pair.key }), service.adminToken)).status).toBe(413);
    expect((await upload(form({ cert: pair.cert + ' '.repeat(70_000), key: pair.key }, false), service.adminToken)).status).toBe(413);
    // Nothing refused was stored or served.
    expect((await service.sql('select count(*)::int as n from tls_certificate'))[0]!.n).toBe(0);
    expect((await servedCertificate(service.running.url)).subject).toContain('CN=127.0.0.1');
  });

  it('an uploaded pair is served by the running HTTPS listener, then the unencrypted one redirects to it', async () => {
    const before = await servedCertificate(service.running.url);
    const pair = await makePair('boxes.example.test');
    const adminToken = service.adminToken;
    // Plain fields (curl -F 'cert=<file') work as well as file parts.
    const uploaded = await service.request('POST', '/api/setup/upload-ssl', { token: adminToken, body: form(pair, false) });
    expect(uploaded.status, uploaded.text).toBe(200);
    const expected = new X509Certificate(pair.cert);
    expect(uploaded.body).toMatchObject({
      applied: true,
      certificate: { source: 'uploaded', subject: 'CN=boxes.example.test', fingerprint_sha256: expected.fingerprint256 },
    });

    // Same process, same listening socket: the next handshake shows the new certificate, and a client that trusts
    // exactly it gets through.
    const after = await servedCertificate(service.running.url);
    expect(after.fingerprint256).toBe(expected.fingerprint256);
    expect(after.fingerprint256).not.toBe(before.fingerprint256);
    expect((await httpsGet(`${service.running.url}/api/status`, pair.cert)).status).toBe(200);

    // The unencrypted listener now sends clients to HTTPS, keeping the path; health probes still answer there.
    const plain = service.running.unencryptedUrl!;
    const redirected = await fetch(`${plain}/api/status?x=1`, { redirect: 'manual' });
    expect(redirected.status).toBe(308);
    expect(redirected.headers.get('location')).toBe(`https://127.0.0.1:${new URL(service.running.url).port}/api/status?x=1`);
    expect((await fetch(`${plain}/health`)).status).toBe(200);
    const setup = await httpsGet(`${service.running.url}/api/setup/status`, pair.cert);
    expect(JSON.parse(setup.body)).toMatchObject({
      https: true,
      redirects_to_https: true,
      certificate: { source: 'uploaded', fingerprint_sha256: expected.fingerprint256 },
    });

    // The key is not readable from the database alone.
    const [row] = await service.sql<{ key_pem: string }>('select key_pem from tls_certificate');
    expect(row!.key_pem).toMatch(/^sealed:v1:/);
    expect(row!.key_pem).not.toContain('PRIVATE KEY');
    // A second replica that was running takes it at its next poll (run here at once); one started now, from its start.
    expect((await servedCertificate(replica.running.url)).fingerprint256).toBe(before.fingerprint256);
    await replica.running.ctx.tls!.refresh();
    expect((await servedCertificate(replica.running.url)).fingerprint256).toBe(expected.fingerprint256);
    const late = await startBoxRepository(service.config, { port: 0, print: () => {} });
    try {
      expect((await servedCertificate(late.url)).fingerprint256).toBe(expected.fingerprint256);
    } finally {
      await late.close();
    }
  });
});
