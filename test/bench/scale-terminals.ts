// `make bench ONLY=scale-terminals` (issue 35, part 2, item 5): the terminal gateway (its own process, local backend,
// one agent process per session, as test/bench/terminal.ts runs it) with many sessions, each figure at two counts:
// - idle attached sessions (default 100 → 400; BOXYARD_BENCH_IDLE_SESSIONS=250,1000 for the counts on a
//   machine with ~25 GiB free: each agent is a Node process of ~20 MiB PSS): the gateway's RSS growth per session
//   (against its RSS with none, measured first) and each agent's PSS (/proc/<pid>/smaps_rollup: pages the agents
//   share are split between them); goal: the per-session cost does not grow with the count (≤ 1.2× of the small);
// - typing sessions (default 50 → 200, BOXYARD_BENCH_TYPING_SESSIONS): every session runs `cat` on its pty and gets
//   a key every 100 ms (10 keys/s, sessions spread over the interval) for TYPING_SECONDS; every echoed byte is
//   checked against what was sent, in order (no byte lost, none reordered), and its round trip is the time from its
//   send to its echo on the WebSocket; goal p99 ≤ 5 ms at the large count. All sessions belong to one user in one
//   bench process (the client's own scheduling is in the figure; it is what a browser adds too).
// The session and socket caps are raised for the bench only (sessions.* in the gateway's environment).
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import type WebSocket from 'ws';
import type { BenchEnv, BenchRow } from './env.ts';
import { round } from './load.ts';
import { growthRow } from './scale.ts';
import { cpuOf, cpuOfAll, pssOf, rssOf } from './scale-procs.ts';
import { agentPids, CAT, login, openSocket, percentile, socketEcho, startGateway, startSession, stopSession, waitQuiet } from './terminal.ts';

const sizes = (variable: string, fallback: [number, number]): [number, number] => {
  const [small, large] = (process.env[variable] ?? '').split(',').map(Number);
  return small && large && large > small ? [small, large] : fallback;
};
const IDLE = sizes('BOXYARD_BENCH_IDLE_SESSIONS', [100, 400]);
const TYPING = sizes('BOXYARD_BENCH_TYPING_SESSIONS', [50, 200]);
const TYPING_SECONDS = 20;
const KEYS_PER_SECOND = 10;
const MiB = 1024 * 1024;
const KEYS = Buffer.from('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Attached {
  id: string;
  socket: WebSocket;
}

/** What one typing session saw: round trips (ms) and the first divergence from what was sent, if any. */
interface Typed {
  trips: number[];
  sent: number;
  received: number;
  wrong?: string;
}

/**
 * Types into a `cat` session at KEYS_PER_SECOND for `seconds`, starting after `offsetMs`, and checks that the echo is
 * exactly the typed bytes in order. Resolves once every byte came back or 5 s after the last key.
 */
async function typeInto(session: Attached, index: number, offsetMs: number, seconds: number): Promise<Typed> {
  const sentAt: bigint[] = [];
  const sent: number[] = [];
  const result: Typed = { trips: [], sent: 0, received: 0 };
  let received = 0;
  let allBack: (() => void) | undefined;
  const listener = (data: Buffer, isBinary: boolean) => {
    if (!isBinary) return;
    const now = process.hrtime.bigint();
    for (const byte of data) {
      if (received >= sent.length) result.wrong ??= `byte ${received}: ${byte} arrived but was never sent`;
      else if (byte !== sent[received]) result.wrong ??= `byte ${received}: ${byte} arrived, ${sent[received]} was sent`;
      else result.trips.push(Number(now - sentAt[received]!) / 1e6);
      received++;
    }
    if (received >= sent.length) allBack?.();
  };
  session.socket.on('message', listener);
  await sleep(offsetMs);
  const keys = seconds * KEYS_PER_SECOND;
  const started = Date.now();
  for (let i = 0; i < keys; i++) {
    // On schedule, not 100 ms after the previous key: a late key does not slow the typing down.
    const due = started + (i * 1000) / KEYS_PER_SECOND - Date.now();
    if (due > 0) await sleep(due);
    const key = KEYS[(i + index) % KEYS.length]!;
    sent.push(key);
    sentAt.push(process.hrtime.bigint());
    session.socket.send(Buffer.from([key]), { binary: true });
  }
  if (received < sent.length) {
    await Promise.race([new Promise<void>((resolve) => (allBack = resolve)), sleep(5000)]);
  }
  session.socket.off('message', listener);
  return { ...result, sent: sent.length, received };
}

/** Starts sessions (10 at a time) and attaches one socket to each. */
async function attach(base: string, cookie: string, from: number, to: number): Promise<Attached[]> {
  const attached: Attached[] = [];
  for (let i = from; i < to; i += 10) {
    attached.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(10, to - i) }, async (_, j) => {
          const session = await startSession(base, cookie, `bench-scale-${i + j}`);
          return { id: session.id, socket: await openSocket(base, session.path, cookie) };
        }),
      )),
    );
  }
  return attached;
}

/** Gateway bytes per session over its RSS with none, and each agent's PSS; after the sessions settled. */
async function memoryAt(gatewayPid: number, emptyRss: number, sessions: Attached[]) {
  await sleep(5000);
  const agents = agentPids(new Set(sessions.map((s) => s.id)));
  if (agents.length < sessions.length) throw new Error(`only ${agents.length} agent processes for ${sessions.length} sessions`);
  return {
    gatewayPerSession: (rssOf(gatewayPid) - emptyRss) / sessions.length,
    gatewayRss: rssOf(gatewayPid),
    agentPss: agents.reduce((sum, pid) => sum + pssOf(pid), 0) / agents.length,
  };
}

/** `count` sessions typing at once: every round trip, and what went wrong in any session. */
async function typingAt(sessions: Attached[], gatewayPid: number) {
  const period = 1000 / KEYS_PER_SECOND;
  const agents = agentPids(new Set(sessions.map((s) => s.id)));
  const cpuBefore = { gateway: cpuOf(gatewayPid), agents: cpuOfAll(agents), client: process.cpuUsage() };
  const results = await Promise.all(sessions.map((s, i) => typeInto(s, i, (i * period) / sessions.length, TYPING_SECONDS)));
  const client = process.cpuUsage(cpuBefore.client);
  const cpu = { gateway: cpuOf(gatewayPid) - cpuBefore.gateway, agents: cpuOfAll(agents) - cpuBefore.agents, client: (client.user + client.system) / 1e6 };
  const trips = results.flatMap((r) => r.trips);
  const lost = results.reduce((sum, r) => sum + Math.max(0, r.sent - r.received), 0);
  const wrong = results.filter((r) => r.wrong !== undefined);
  if (wrong.length > 0) console.error(`  [bench] ${wrong.length} sessions echoed other bytes than typed, first: ${wrong[0]!.wrong}`);
  const keys = results.reduce((sum, r) => sum + r.sent, 0);
  // CPU per keystroke (µs), whatever else the machine runs: where the time goes when the p99 is long.
  const perKey = (seconds: number) => (seconds * 1e6) / Math.max(1, keys);
  return {
    p99: percentile(trips, 99),
    p50: percentile(trips, 50),
    keys,
    lost,
    wrong: wrong.length,
    gatewayCpu: perKey(cpu.gateway),
    agentCpu: perKey(cpu.agents),
    clientCpu: perKey(cpu.client),
    load: loadavg()[0]!,
  };
}

export async function benchScaleTerminals(env: BenchEnv): Promise<BenchRow[]> {
  const adminPassword = `Bench-${randomBytes(9).toString('base64url')}1`;
  const cap = String(Math.max(IDLE[1], TYPING[1]) + 20);
  const { child, base } = await startGateway(env, adminPassword, {
    BOXYARD_SESSIONS__PER_USER_LIMIT: cap,
    BOXYARD_SESSIONS__GLOBAL_LIMIT: cap,
    BOXYARD_SESSIONS__MAX_SOCKETS_PER_USER: cap,
    BOXYARD_SESSIONS__MAX_SOCKETS: cap,
  });
  const pid = child.pid!;
  const cookie = await login(base, adminPassword);
  const sessions: Attached[] = [];
  try {
    // One session started and stopped first, so every code path is loaded before the empty figure.
    const [warm] = await attach(base, cookie, -1, 0);
    warm!.socket.close();
    await stopSession(base, cookie, warm!.id);
    await sleep(2000);
    const emptyRss = rssOf(pid);
    sessions.push(...(await attach(base, cookie, 0, IDLE[0])));
    const small = await memoryAt(pid, emptyRss, sessions);
    console.error(`  [bench] ${IDLE[0]} idle sessions: gateway ${round(small.gatewayRss / MiB)} MiB, agent PSS ${round(small.agentPss / MiB)} MiB`);
    sessions.push(...(await attach(base, cookie, IDLE[0], IDLE[1])));
    const large = await memoryAt(pid, emptyRss, sessions);
    console.error(`  [bench] ${IDLE[1]} idle sessions: gateway ${round(large.gatewayRss / MiB)} MiB, agent PSS ${round(large.agentPss / MiB)} MiB`);

    // The typing sessions are the first of the idle ones (the others stay attached and idle meanwhile).
    const typists = sessions.slice(0, TYPING[1]);
    await Promise.all(
      typists.map(async (s) => {
        const echo = socketEcho(s.socket);
        echo.send(Buffer.from(`${CAT}\r`));
        await waitQuiet(echo, 1000);
      }),
    );
    const few = await typingAt(typists.slice(0, TYPING[0]), pid);
    const many = await typingAt(typists, pid);
    const kib = (bytes: number) => bytes / 1024;
    const flat = (s: number, l: number) => l <= 1.2 * s;
    return [
      {
        name: `gateway RSS with no session (then ${IDLE[0].toLocaleString('en')} and ${IDLE[1].toLocaleString('en')} idle attached sessions: ${round(small.gatewayRss / MiB)}, ${round(large.gatewayRss / MiB)} MiB)`,
        value: round(emptyRss / MiB),
        unit: 'MiB',
      },
      growthRow({
        name: 'gateway memory per idle attached session (RSS growth / sessions)',
        unit: 'KiB',
        small: kib(small.gatewayPerSession),
        large: kib(large.gatewayPerSession),
        sizes: IDLE,
        kind: 'cost',
        goal: '≤ 1.20× of the small count',
        pass: flat(small.gatewayPerSession, large.gatewayPerSession),
      }),
      growthRow({
        name: 'agent memory per session (PSS)',
        unit: 'MiB',
        small: small.agentPss / MiB,
        large: large.agentPss / MiB,
        sizes: IDLE,
        kind: 'cost',
        goal: '≤ 1.20× of the small count',
        pass: flat(small.agentPss, large.agentPss),
      }),
      growthRow({
        name: `keystroke round trip p99, sessions each typing ${KEYS_PER_SECOND} keys/s`,
        unit: 'ms',
        small: few.p99,
        large: many.p99,
        sizes: TYPING,
        kind: 'cost',
        goal: '≤ 5 ms',
        pass: many.p99 <= 5,
      }),
      {
        ...growthRow({
          name: `keystroke round trip p50, sessions each typing ${KEYS_PER_SECOND} keys/s`,
          unit: 'ms',
          small: few.p50,
          large: many.p50,
          sizes: TYPING,
          kind: 'cost',
          goal: '',
          pass: true,
        }),
        goal: undefined,
        pass: undefined,
      },
      growthRow({
        name: `gateway CPU per keystroke (load average ${round(few.load, 1)} → ${round(many.load, 1)})`,
        unit: 'µs',
        small: few.gatewayCpu,
        large: many.gatewayCpu,
        sizes: TYPING,
        kind: 'cost',
        goal: '≤ 1.20× of the small count',
        pass: many.gatewayCpu <= 1.2 * few.gatewayCpu,
      }),
      growthRow({
        name: "agent CPU per keystroke (all typing sessions' agents)",
        unit: 'µs',
        small: few.agentCpu,
        large: many.agentCpu,
        sizes: TYPING,
        kind: 'cost',
        goal: '≤ 1.20× of the small count',
        pass: many.agentCpu <= 1.2 * few.agentCpu,
      }),
      {
        ...growthRow({
          name: "the bench client's CPU per keystroke (all sessions' WebSockets in one process)",
          unit: 'µs',
          small: few.clientCpu,
          large: many.clientCpu,
          sizes: TYPING,
          kind: 'cost',
          goal: '',
          pass: true,
        }),
        goal: undefined,
        pass: undefined,
      },
      {
        name: `keys lost or echoed out of order (${few.keys.toLocaleString('en')} + ${many.keys.toLocaleString('en')} keys; sessions with a wrong byte: ${few.wrong + many.wrong})`,
        value: few.lost + many.lost + few.wrong + many.wrong,
        unit: 'keys',
        goal: '= 0',
        pass: few.lost + many.lost + few.wrong + many.wrong === 0,
      },
    ];
  } finally {
    for (const s of sessions) s.socket.close();
    for (let i = 0; i < sessions.length; i += 20) await Promise.all(sessions.slice(i, i + 20).map((s) => stopSession(base, cookie, s.id)));
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}
