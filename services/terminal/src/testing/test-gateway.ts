// Test helpers: a gateway on a fresh database, signing in, REST calls, and a terminal client over the real
// WebSocket protocol (the way a script or the browser page would use it).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import WebSocket from 'ws';
import { startTerminal, type TerminalService } from '../service.ts';
import { terminalConfigSchema, type TerminalConfig } from '../config.ts';
import type { ServerMessage } from '../protocol.ts';

export const ADMIN_PASSWORD = `Admin-${randomBytes(9).toString('base64url')}1`;

/** OS accounts a root test gateway creates: a prefix per database (replicas share it), homes under /var/tmp. */
export function testAccounts(databaseUrl: string) {
  const prefix = `bxt${createHash('sha256').update(databaseUrl).digest('hex').slice(0, 6)}-`;
  return { prefix, home_base: `/var/tmp/boxyard-test-homes/${prefix}` };
}

/** The OS accounts whose names start with `prefix` (from /etc/passwd, where useradd writes them). */
export function accountsWithPrefix(prefix: string): { name: string; uid: number; home: string }[] {
  return readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .filter((fields) => fields[0]?.startsWith(prefix))
    .map((fields) => ({ name: fields[0]!, uid: Number(fields[2]), home: fields[5]! }));
}

/** Removes the accounts (and homes) a test gateway created. */
export function removeTestAccounts(prefix: string, homeBase: string): void {
  for (const account of accountsWithPrefix(prefix)) {
    try {
      execFileSync('userdel', ['--force', account.name], { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
  rmSync(homeBase, { recursive: true, force: true });
}

const openGateways = new Map<string, number>();

export async function startTestGateway(databaseUrl: string, overrides: Record<string, unknown> = {}): Promise<TerminalService & { config: TerminalConfig }> {
  const accounts = testAccounts(databaseUrl);
  const base = {
    server: { host: '127.0.0.1', port: 0 },
    // OS-chosen like the public port, also when a test fixes that one (files run in parallel).
    metrics: { port: 0 },
    logging: { level: process.env.TERMINAL_TEST_LOG ?? 'silent' },
    database: { url: databaseUrl },
    rate_limiting: { max_requests: 100_000 },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: ADMIN_PASSWORD },
    backend: { local: { accounts } },
  };
  const merge = (a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> => {
    const out = { ...a };
    for (const [key, value] of Object.entries(b)) {
      const current = out[key];
      out[key] =
        value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object'
          ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
          : value;
    }
    return out;
  };
  const config = terminalConfigSchema.parse(merge(base, overrides));
  const root = process.getuid?.() === 0;
  if (root) mkdirSync(accounts.home_base, { recursive: true, mode: 0o755 });
  const service = await startTerminal(config, { print: () => {} });
  openGateways.set(accounts.prefix, (openGateways.get(accounts.prefix) ?? 0) + 1);
  const close = service.close.bind(service);
  return Object.assign(service, {
    config,
    async close() {
      await close();
      // The last gateway of this database removes the OS accounts its sessions got.
      const left = (openGateways.get(accounts.prefix) ?? 1) - 1;
      openGateways.set(accounts.prefix, left);
      if (left === 0 && root) removeTestAccounts(accounts.prefix, accounts.home_base);
    },
  });
}

export interface ApiResult {
  status: number;
  headers: Headers;
  // Tests read whatever the response holds; the assertions check its shape.
  json: any;
}

export async function api(base: string, method: string, path: string, options: { cookie?: string; body?: unknown; origin?: string } = {}): Promise<ApiResult> {
  const headers: Record<string, string> = {};
  if (options.cookie) headers.cookie = options.cookie;
  if (options.origin) headers.origin = options.origin;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : {} };
}

/** Signs in and returns the `auth_token=...` cookie pair to send back. */
export async function login(base: string, username: string, password: string): Promise<string> {
  const response = await fetch(`${base}/auth/login/basic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (response.status !== 200) throw new Error(`login as ${username}: ${response.status} ${await response.text()}`);
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('auth_token='));
  if (!cookie) throw new Error('no auth_token cookie');
  return cookie.split(';')[0]!;
}

export async function createUser(
  base: string,
  adminCookie: string,
  username: string,
  role: 'user' | 'admin' = 'user',
): Promise<{ username: string; password: string; cookie: string; id: string }> {
  const password = `Pw-${randomBytes(9).toString('base64url')}7a`;
  const created = await api(base, 'POST', '/api/users', { cookie: adminCookie, body: { username, password, role } });
  if (created.status !== 200) throw new Error(`create user ${username}: ${created.status} ${JSON.stringify(created.json)}`);
  return { username, password, cookie: await login(base, username, password), id: created.json.data.user.id };
}

export interface TerminalClient {
  socket: WebSocket;
  /** Everything received as terminal data so far. */
  output(): string;
  controls: ServerMessage[];
  waitFor(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  type(text: string): void;
  control(message: unknown): void;
  closed: Promise<{ code: number; reason: string }>;
  close(): Promise<void>;
}

/** Strips ANSI escape sequences and carriage returns, so assertions read what a person would see. */
// eslint-disable-next-line no-control-regex -- escape sequences are control characters
export const plain = (text: string) => text.replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]|\r/g, '');

export async function openTerminal(base: string, path: string, options: { cookie?: string; origin?: string } = {}): Promise<TerminalClient> {
  const url = `${base.replace(/^http/, 'ws')}${path}`;
  const headers: Record<string, string> = {};
  if (options.cookie) headers.cookie = options.cookie;
  const socket = new WebSocket(url, { headers, ...(options.origin ? { origin: options.origin } : {}) });
  let data = '';
  const controls: ServerMessage[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (message, isBinary) => {
    if (isBinary) data += message.toString();
    else controls.push(JSON.parse(message.toString()) as ServerMessage);
    for (const wake of waiters) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    socket.once('error', reject);
  });
  return {
    socket,
    output: () => data,
    controls,
    closed,
    waitFor(pattern, timeoutMs = 20_000) {
      const test = () => (typeof pattern === 'string' ? plain(data).includes(pattern) : pattern.test(plain(data)));
      if (test()) return Promise.resolve(plain(data));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`timed out waiting for ${String(pattern)}; got: ${JSON.stringify(plain(data).slice(-500))}`));
        }, timeoutMs);
        const wake = () => {
          if (!test()) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(plain(data));
        };
        waiters.add(wake);
        void closed.then(() => setTimeout(wake, 0));
      });
    },
    type: (text) => socket.send(Buffer.from(text), { binary: true }),
    control: (message) => socket.send(JSON.stringify(message)),
    async close() {
      if (socket.readyState === WebSocket.OPEN) socket.close(1000);
      await closed;
    },
  };
}

/** The HTTP status a refused upgrade got. */
export async function upgradeStatus(base: string, path: string, options: { cookie?: string; origin?: string } = {}): Promise<number> {
  try {
    const client = await openTerminal(base, path, options);
    await client.close();
    return 101;
  } catch (error) {
    const match = /upgrade refused: (\d+)/.exec((error as Error).message);
    if (!match) throw error;
    return Number(match[1]);
  }
}
