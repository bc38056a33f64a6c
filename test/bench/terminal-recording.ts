// Recording on vs off (issue 31), same run: two gateways side by side, one with recording.mode on (local store
// under the bench's work directory), one with it off; keystroke round trips in alternating blocks and 128 MiB
// floods alternating. Goals: p99 ≤ 1.1× and flood ≥ 0.9× of off. Beside the wall-clock ratios (noisy on a shared
// 2-core machine) the CPU time the gateway and the session's agent spent per flood, read from /proc: that is where
// recording costs show first, and it does not depend on what else the machine is doing.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchEnv, BenchRow } from './env.ts';
import {
  agentPids,
  BLOCK,
  CAT,
  cpuSeconds,
  FLOOD_BYTES,
  FLOOD_REPEATS,
  KEYSTROKES,
  login,
  mean,
  median,
  MiB,
  openSocket,
  percentile,
  roundTrips,
  row,
  socketEcho,
  startGateway,
  startSession,
  stopSession,
  timeUntil,
  waitQuiet,
} from './terminal.ts';

interface Gateway {
  base: string;
  cookie: string;
  pid: number;
}

/** A cat session's keystroke round trips (ms) over a gateway's WebSocket, in blocks the caller interleaves. */
async function keystrokeSession(gateway: Gateway, name: string) {
  const session = await startSession(gateway.base, gateway.cookie, name);
  const socket = await openSocket(gateway.base, session.path, gateway.cookie);
  const echo = socketEcho(socket);
  echo.send(Buffer.from(`${CAT}\r`));
  await waitQuiet(echo);
  const trip = roundTrips(echo);
  await trip(50);
  return {
    trip,
    async close() {
      socket.close();
      await stopSession(gateway.base, gateway.cookie, session.id);
    },
  };
}

/** One 128 MiB flood over a gateway's WebSocket: MiB/s, and CPU seconds of the gateway and the session's agent. */
async function flood(gateway: Gateway, run: number): Promise<{ rate: number; gatewayCpu: number; agentCpu: number }> {
  const session = await startSession(gateway.base, gateway.cookie, `bench-rec-flood-${run}`);
  const socket = await openSocket(gateway.base, session.path, gateway.cookie);
  const echo = socketEcho(socket);
  await waitQuiet(echo);
  const [agent] = agentPids(new Set([session.id]));
  const before = { gateway: cpuSeconds(gateway.pid), agent: agent ? cpuSeconds(agent) : 0 };
  const marker = `FLOOD-END-${run}`;
  const { bytes, seconds } = await timeUntil(echo, marker, () =>
    echo.send(Buffer.from(`head -c ${FLOOD_BYTES} /dev/zero | tr '\\0' x; echo FLOOD-""END-${run}\r`)),
  );
  const after = { gateway: cpuSeconds(gateway.pid), agent: agent ? cpuSeconds(agent) : 0 };
  if (bytes < FLOOD_BYTES) throw new Error(`flood: received ${bytes} bytes`);
  socket.close();
  await stopSession(gateway.base, gateway.cookie, session.id);
  return { rate: FLOOD_BYTES / MiB / seconds, gatewayCpu: after.gateway - before.gateway, agentCpu: after.agent - before.agent };
}

export async function benchTerminalRecording(env: BenchEnv): Promise<BenchRow[]> {
  const adminPassword = `Bench-${randomBytes(9).toString('base64url')}1`;
  const store = join(env.workDir, `terminal-recordings-${randomBytes(4).toString('hex')}`);
  mkdirSync(store);
  const offProcess = await startGateway(env, adminPassword);
  const onProcess = await startGateway(env, adminPassword, {
    BOXYARD_RECORDING__MODE: 'on',
    BOXYARD_RECORDING__MAX_BYTES: String(1024 * MiB),
    BOXYARD_STORAGE__DRIVER: 'local',
    BOXYARD_STORAGE__ROOT: store,
  });
  try {
    const off: Gateway = { base: offProcess.base, cookie: await login(offProcess.base, adminPassword), pid: offProcess.child.pid! };
    const on: Gateway = { base: onProcess.base, cookie: await login(onProcess.base, adminPassword), pid: onProcess.child.pid! };
    const withRecording = await keystrokeSession(on, 'bench-rec-latency-on');
    const without = await keystrokeSession(off, 'bench-rec-latency-off');
    const onTrips: number[] = [];
    const offTrips: number[] = [];
    for (let i = 0; i < KEYSTROKES / BLOCK; i++) {
      onTrips.push(...(await withRecording.trip(BLOCK)));
      offTrips.push(...(await without.trip(BLOCK)));
    }
    await withRecording.close();
    await without.close();
    const onFloods: Awaited<ReturnType<typeof flood>>[] = [];
    const offFloods: Awaited<ReturnType<typeof flood>>[] = [];
    for (let run = 0; run < FLOOD_REPEATS; run++) {
      onFloods.push(await flood(on, 100 + run));
      offFloods.push(await flood(off, 200 + run));
    }
    const us = (ms: number) => ms * 1000;
    const p99 = row('keystroke round trip p99: recording on (vs off)', 'µs', us(percentile(onTrips, 99)), us(percentile(offTrips, 99)));
    const rate = row('output flood 128 MiB: recording on (vs off)', 'MiB/s', median(onFloods.map((f) => f.rate)), median(offFloods.map((f) => f.rate)));
    const cpu = (floods: typeof onFloods, of: 'gatewayCpu' | 'agentCpu') => median(floods.map((f) => f[of]));
    return [
      { ...p99, goal: '≤ 1.10×', pass: p99.ratio! <= 1.1 },
      row('keystroke round trip mean: recording on (vs off)', 'µs', us(mean(onTrips)), us(mean(offTrips))),
      { ...rate, goal: '≥ 0.90×', pass: rate.ratio! >= 0.9 },
      row('gateway CPU per 128 MiB flood: recording on (vs off)', 'ms', 1000 * cpu(onFloods, 'gatewayCpu'), 1000 * cpu(offFloods, 'gatewayCpu')),
      row('agent CPU per 128 MiB flood: recording on (vs off)', 'ms', 1000 * cpu(onFloods, 'agentCpu'), 1000 * cpu(offFloods, 'agentCpu')),
    ];
  } finally {
    for (const gateway of [onProcess, offProcess]) {
      gateway.child.kill('SIGTERM');
      await new Promise((r) => gateway.child.once('exit', r));
    }
  }
}
