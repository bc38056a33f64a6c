// The floor of the terminal's architecture, measured beside it: a keystroke through two bare Node relays placed as
// the gateway and the agent are (client -TCP-> relay -unix socket-> relay owning the pty -> `cat` -> back), with
// none of the product's work: no WebSocket framing, no checks, no batching, the pty written synchronously as the
// agent does (agent/pty-input.ts). What the product adds is the difference to this; what the architecture costs
// (two more processes, each woken to read one socket and write another) is this against the raw pty.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { freePort } from '@boxyard/kit/net/free-port.ts';

/** The agent's place: a unix socket in, a pty running `command` behind it. */
const PTY_RELAY = `
  import { createServer } from 'node:net';
  import { createRequire } from 'node:module';
  import { writeSync } from 'node:fs';
  const pty = createRequire(process.env.TERMINAL_SRC + 'service.ts')('node-pty');
  createServer((socket) => {
    const term = pty.spawn('/bin/sh', ['-c', process.env.COMMAND], { name: 'xterm-256color', cols: 120, rows: 40, env: { PATH: '/usr/bin:/bin', TERM: 'xterm-256color' }, encoding: null });
    term.onData((data) => socket.write(data));
    socket.on('data', (data) => writeSync(term.fd, data));
    socket.on('close', () => term.kill());
  }).listen(process.env.SOCKET, () => console.log('relay ready'));`;

/** The gateway's place: TCP in, the unix socket out, bytes passed both ways as they come. */
const SOCKET_RELAY = `
  import { createServer, connect } from 'node:net';
  createServer((client) => {
    client.setNoDelay(true);
    const upstream = connect(process.env.SOCKET);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
  }).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('relay ready'));`;

function startRelay(source: string, flags: string[], env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...flags, '--input-type=module', '-e', source], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('relay ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`relay exited with ${code}`)));
  });
}

export interface BareRelays {
  socket: Socket;
  /** The relays' processes: the pty's, then the socket's. */
  pids: number[];
  stop(): Promise<void>;
}

/** Both relays started with the product's V8 flags, and a client connected through them to `command` on a pty. */
export async function startBareRelays(terminalSrc: string, workDir: string, flags: string[], command: string): Promise<BareRelays> {
  const path = join(workDir, `floor-${process.pid}-${Date.now()}.sock`);
  const port = await freePort();
  const relays = [
    await startRelay(PTY_RELAY, flags, { TERMINAL_SRC: terminalSrc, COMMAND: command, SOCKET: path }),
    await startRelay(SOCKET_RELAY, flags, { SOCKET: path, PORT: String(port) }),
  ];
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return {
    socket,
    pids: relays.map((relay) => relay.pid!),
    async stop() {
      socket.destroy();
      for (const relay of relays) {
        relay.kill('SIGTERM');
        if (relay.exitCode === null) await new Promise((r) => relay.once('exit', r));
      }
    },
  };
}
