// kill -9 of the gateway mid-session (local backend): what was recorded up to then is kept and readable, through
// another gateway on the same database and store, by the API and by Debian's `asciinema cat`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, login, openTerminal, plain, startTestGateway, testAccounts } from '../testing/test-gateway.ts';
import { asciinemaCat } from '../testing/asciinema.ts';

const SRC = fileURLToPath(new URL('../', import.meta.url));

/** A gateway in a process of its own (so it can be killed), configured through BOXYARD_ variables. */
async function gatewayProcess(env: Record<string, string>) {
  const port = await freePort();
  const launch = `
    import { loadConfig } from '@boxyard/kit';
    import { startTerminal } from ${JSON.stringify(join(SRC, 'service.ts'))};
    import { terminalConfigSchema } from ${JSON.stringify(join(SRC, 'config.ts'))};
    await startTerminal(loadConfig(terminalConfigSchema), { print: () => {} });
    console.log('gateway ready');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', launch], {
    cwd: SRC,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      BOXYARD_SERVER__HOST: '127.0.0.1',
      BOXYARD_SERVER__PORT: String(port),
      BOXYARD_METRICS__PORT: '0',
      BOXYARD_LOGGING__LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('gateway ready') && resolve());
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

describe('a gateway killed mid-session', () => {
  const dir = mkdtempSync(join(tmpdir(), 'recordings-crash-'));
  let second: Awaited<ReturnType<typeof startTestGateway>> | undefined;

  afterAll(async () => {
    await second?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves everything recorded up to then readable', async () => {
    const databaseUrl = await createTestDatabase('terminal_recording_crash');
    const secret = randomBytes(32).toString('base64url');
    const accounts = testAccounts(databaseUrl);
    const first = await gatewayProcess({
      BOXYARD_DATABASE__URL: databaseUrl,
      BOXYARD_SESSION__SECRET: secret,
      BOXYARD_ADMIN__PASSWORD: ADMIN_PASSWORD,
      BOXYARD_RECORDING__MODE: 'on',
      BOXYARD_RECORDING__FLUSH_SECONDS: '0.2',
      BOXYARD_STORAGE__DRIVER: 'local',
      BOXYARD_STORAGE__ROOT: dir,
      BOXYARD_BACKEND__LOCAL__ACCOUNTS__PREFIX: accounts.prefix,
      BOXYARD_BACKEND__LOCAL__ACCOUNTS__HOME_BASE: accounts.home_base,
    });
    let cookie: string;
    let sessionId: string;
    try {
      cookie = await login(first.url, 'admin', ADMIN_PASSWORD);
      const started = await api(first.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'crash-1' } });
      expect(started.status).toBe(200);
      sessionId = started.json.data.session.id;
      const client = await openTerminal(first.url, started.json.data.websocket_path, { cookie });
      client.type('echo $((6*7))\r');
      await client.waitFor(/^42\r?$/m);
      // Two flush periods: the output is stored; then the gateway dies without any chance to clean up.
      await new Promise((r) => setTimeout(r, 600));
      first.child.kill('SIGKILL');
      await client.closed;
    } finally {
      first.child.kill('SIGKILL');
    }
    second = await startTestGateway(databaseUrl, { session: { secret }, recording: { mode: 'on' }, storage: { driver: 'local', root: dir } });
    const admin = await login(second.url, 'admin', ADMIN_PASSWORD);
    const cast = await fetch(`${second.url}/api/terminal/recordings/${sessionId}/cast`, { headers: { cookie: admin } });
    expect(cast.status).toBe(200);
    const file = join(dir, 'crash.cast');
    writeFileSync(file, await cast.text());
    const shown = plain(await asciinemaCat(file, dir));
    expect(shown.split(/\r?\n/).map((line) => line.trim())).toContain('42');

    // The shell outlived its gateway. Once the dead gateway's lease has run out, attaching through the other one
    // takes the recording over where its stored chunks end: nothing recorded twice.
    // (15 s: the dead gateway's lease.)
    const stateOf = async () => (await api(second!.url, 'GET', `/api/terminal/recordings/${sessionId}`, { cookie: admin })).json.data.recording.state;
    await expect.poll(stateOf, { timeout: 25_000, interval: 500 }).toBe('interrupted');
    const client = await openTerminal(second.url, `/ws/terminal/${sessionId}`, { cookie: admin });
    await expect.poll(stateOf, { timeout: 10_000 }).toBe('recording');
    client.type('echo resumed$((5*5))\r');
    await client.waitFor('resumed25');
    await client.close();
    await second.sessions.stop(sessionId);
    await expect
      .poll(async () => (await api(second!.url, 'GET', `/api/terminal/recordings/${sessionId}`, { cookie: admin })).json.data.recording.state, {
        timeout: 10_000,
      })
      .toBe('complete');
    const whole = await (await fetch(`${second.url}/api/terminal/recordings/${sessionId}/cast`, { headers: { cookie: admin } })).text();
    const output = plain(
      whole
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => JSON.parse(line) as [number, string, string])
        .filter(([, code]) => code === 'o')
        .map(([, , data]) => data)
        .join(''),
    );
    expect(output).toContain('resumed25');
    expect(output.split(/\r?\n/).filter((line) => line.trim() === '42')).toHaveLength(1);
    expect(whole).toContain('recording resumed by another gateway');
  }, 90_000);
});
