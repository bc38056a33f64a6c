// `make bench ONLY=memory`: the memory of the one-process product (`make run`) under each kind of load.
// The product starts through the same code as `boxyard dev` (runAll: every service in one Node process, embedded
// PostgreSQL as its own processes), as `boxyard serve all` with a host config in a scratch home so it gets its own
// ports and state (dev's ports are fixed, and another `make run` may hold them), rate limiting off. Then:
//  - RSS idle after start (goal ≤ 300 MiB);
//  - per load, 3 rounds: peak RSS during the rounds (reported), the V8 heap in use after a full GC at the end of
//    each round (round 3 against round 1: no growth beyond a tolerance), and RSS 60 s after the last round
//    (goal ≤ 1.2× idle);
//  - then every load once, back to back (metadata, transfers, JSON and HTML listings, terminals), and RSS 60 s after
//    the last one (goal ≤ 1.2× idle, issue 35), with where the memory is (V8 heap, Buffers, the rest: malloc).
// The heap figure comes from the process's own V8 through the inspector protocol (the child runs with
// --inspect=127.0.0.1:0, connected only while measuring): HeapProfiler.collectGarbage, then Runtime.getHeapUsage.
// @prometheus-io/client's nodejs_heap_size_used_bytes is the same number without a GC before it, so it would mostly measure
// when the last GC happened.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import WebSocket from 'ws';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { generatedBox, httpUpload, createPublicBox } from './box-repository.ts';
import { progress } from './downloads.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { LAUNCHER_ENV, launcherNodeFlags } from './launcher.ts';
import { downloadMiBs, loadGet, round } from './load.ts';
import { login, startSession, stopSession } from './terminal.ts';
import { ignoreError } from '@boxyard/kit';

const main = fileURLToPath(new URL('../../services/boxyard/src/main.ts', import.meta.url));
const MiB = 1024 * 1024;
const ROUNDS = 3;
const IDLE_GOAL = 300 * MiB;
const SETTLE_SECONDS = 60;
/**
 * Heap in use after a full GC may differ between rounds without any leak: V8 keeps feedback and compiled code of
 * newly optimised functions on the heap, pools (pg, undici) settle at their size, client histograms gain a
 * label set the first time a route answers a status. A few MiB, once; a leak grows with every round's work
 * (a 10,000-entry listing is ~1.5 MiB per answer, a box round moves hundreds of MiB). So: round 3 may exceed round 1
 * by at most 5% of round 1's heap or 4 MiB, whichever is larger (measured: 0.0–0.4 MiB on an ~80 MiB heap).
 */
const heapTolerance = (first: number) => Math.max(0.05 * first, 4 * MiB);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const statusField = async (pid: number, field: string) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
export const rssOf = (pid: number) => statusField(pid, 'VmRSS');

/** The product as `make run` runs it: one Node process, its services' URLs, its home. */
interface Product {
  child: ChildProcess;
  pid: number;
  urls: Record<string, string>;
  home: string;
  postgresPort: number;
  adminPassword: string;
  /** Inspector protocol calls on a short connection: the last call's result. */
  inspect<T>(calls: { method: string; params?: object }[]): Promise<T>;
  /** V8's heap in use after a full GC (bytes). */
  heapAfterGc(): Promise<number>;
  stop(): Promise<void>;
}

export async function startProduct(env: BenchEnv, options: { env?: Record<string, string> } = {}): Promise<Product> {
  const dir = join(env.workDir, `memory-${randomBytes(4).toString('hex')}`);
  const home = join(dir, 'home');
  await mkdir(home, { recursive: true, mode: 0o755 });
  // Five ports picked before anything listens: the OS may hand out one of them twice (it did: EADDRINUSE).
  const taken = new Set<number>();
  const distinctPort = async (): Promise<number> => {
    for (;;) {
      const port = await freePort();
      if (taken.has(port)) continue;
      taken.add(port);
      return port;
    }
  };
  const postgresPort = await distinctPort();
  const listener = async () => ({ server: { host: '127.0.0.1', port: await distinctPort() }, metrics: { port: 0 }, logging: { level: 'warn' } });
  const service = async () => ({ ...(await listener()), rate_limiting: { enabled: false } });
  const config = {
    home,
    database: { embedded: { port: postgresPort } },
    services: {
      'box-repository': { ...(await service()), uploads: { max_bytes: 1024 * MiB } },
      'file-share': await service(),
      terminal: { ...(await service()), sessions: { per_user_limit: 20, global_limit: 20 } },
      'second-service': await listener(), // no rate limiting of its own
    },
  };
  const configFile = join(dir, 'boxyard.yaml');
  await writeFile(configFile, JSON.stringify(config), { mode: 0o600 }); // JSON is YAML
  const adminPassword = `Bench-${randomBytes(8).toString('hex')}-1A`;
  const child = spawn(process.execPath, [...launcherNodeFlags(), '--inspect=127.0.0.1:0', main, 'serve', 'all', '--config', configFile], {
    env: { ...process.env, ...LAUNCHER_ENV, ...options.env, BOXYARD_ADMIN_PASSWORD: adminPassword },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let inspectorUrl = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    inspectorUrl ||= /Debugger listening on (ws:\/\/\S+)/.exec(text)?.[1] ?? '';
    if (!text.includes('Debugger') && !text.includes('inspector')) output += text;
  });
  const exited = once(child, 'exit');
  await Promise.race([
    (async () => {
      while (!output.includes('\nReady.')) await sleep(100);
    })(),
    exited.then(([code]) => {
      throw new Error(`boxyard serve all exited with ${code}:\n${output}`);
    }),
  ]);
  if (!inspectorUrl) throw new Error('no inspector URL from the product process');
  const urls = Object.fromEntries([...output.matchAll(/^ {2}([a-z-]+) +(https?:\/\/\S+)$/gm)].map((m) => [m[1]!, m[2]!]));

  /** One inspector call on a short-lived connection (no debugger session stays attached during the loads). */
  const inspect = async <T>(calls: { method: string; params?: object }[]): Promise<T> => {
    const socket = new WebSocket(inspectorUrl);
    await once(socket, 'open');
    try {
      let result: unknown;
      for (const [id, call] of calls.entries()) {
        const answer = new Promise<unknown>((resolve, reject) => {
          const listener = (data: Buffer) => {
            const message = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
            if (message.id !== id) return;
            socket.off('message', listener);
            if (message.error) reject(new Error(`${call.method}: ${message.error.message}`));
            else resolve(message.result);
          };
          socket.on('message', listener);
        });
        socket.send(JSON.stringify({ id, ...call }));
        result = await answer;
      }
      return result as T;
    } finally {
      socket.close();
    }
  };
  return {
    child,
    pid: child.pid!,
    urls,
    home,
    postgresPort,
    adminPassword,
    inspect,
    async heapAfterGc() {
      // Twice: the first full GC may leave objects with finalizers (weak refs, FinalizationRegistry) for the next.
      const usage = await inspect<{ usedSize: number }>([
        { method: 'HeapProfiler.collectGarbage' },
        { method: 'HeapProfiler.collectGarbage' },
        { method: 'Runtime.getHeapUsage' },
      ]);
      return usage.usedSize;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Highest RSS of `pid` while `work` runs: VmHWM after resetting it (clear_refs 5), and 50 ms samples of VmRSS. */
export async function peakDuring(pid: number, work: () => Promise<void>): Promise<number> {
  const resettable = await writeFile(`/proc/${pid}/clear_refs`, '5').then(
    () => true,
    () => false,
  );
  let peak = 0;
  const timer = setInterval(() => void rssOf(pid).then((rss) => (peak = Math.max(peak, rss)), ignoreError('the process may have ended between samples')), 50);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, await rssOf(pid), resettable ? await statusField(pid, 'VmHWM') : 0);
}

interface Load {
  name: string;
  /** Once, before the first round (data to serve); gives one round of the load, which says what it achieved. */
  prepare(product: Product): Promise<(round: number) => Promise<string>>;
}

const metadataLoad: Load = {
  name: 'box metadata (32 clients, 5 s)',
  async prepare(product) {
    const base = product.urls['box-repository']!;
    const { token, uploadUrl } = await createPublicBox(base, product.adminPassword, { org: 'bench', box: 'meta', versions: ['1.0.0', '1.1.0', '2.0.0'] });
    for (const version of ['1.0.0', '1.1.0', '2.0.0']) {
      const uploaded = await httpUpload(uploadUrl(version), { 'x-access-token': token }, generatedBox(4096));
      if (uploaded.status >= 300) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
    }
    return async () => `${round((await loadGet(`${base}/bench/meta`, { seconds: 5, connections: 32 })).rps, 0)} req/s`;
  },
};

const BOX_BYTES = 256 * MiB;
const transferLoad: Load = {
  name: 'box upload + download (256 MiB, local storage, 4 streams)',
  async prepare(product) {
    const base = product.urls['box-repository']!;
    const { token, uploadUrl } = await createPublicBox(base, product.adminPassword, { org: 'transfer', box: 'big', versions: ['1.0.0'] });
    return async () => {
      const uploaded = await httpUpload(`${uploadUrl('1.0.0')}?replace=true`, { 'x-access-token': token }, generatedBox(BOX_BYTES));
      if (uploaded.status >= 300) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
      const size = Number(
        (await fetch(`${base}/transfer/boxes/big/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`, { method: 'HEAD' })).headers.get('content-length'),
      );
      return `${round(await downloadMiBs(`${base}/transfer/boxes/big/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`, { streams: 4, bytes: size }), 0)} MiB/s down`;
    };
  },
};

const LISTING_ENTRIES = 10_000;

/** A folder of LISTING_ENTRIES files named `name` straight in the tree (a listing never touches storage), and a downloads key. */
async function listingFolder(product: Product, name: string): Promise<{ url: string; token: string }> {
  const base = product.urls['file-share']!;
  const admin = `Basic ${Buffer.from(`admin:${product.adminPassword}`).toString('base64')}`;
  const keyResponse = await fetch(`${base}/api/api-keys`, {
    method: 'POST',
    headers: { authorization: admin, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench-${name}`, permissions: ['downloads'] }),
  });
  const token = ((await keyResponse.json()) as { data: { token: string } }).data.token;
  await fetch(`${base}/folders`, {
    method: 'POST',
    headers: { authorization: admin, 'content-type': 'application/json' },
    body: JSON.stringify({ folderName: name }),
  });
  // On the product's own PostgreSQL.
  const secrets = JSON.parse(await readFile(join(product.home, 'secrets.json'), 'utf8')) as { postgres_password: string };
  const client = new pg.Client({
    connectionString: `postgres://postgres:${encodeURIComponent(secrets.postgres_password)}@127.0.0.1:${product.postgresPort}/boxyard`,
  });
  await client.connect();
  try {
    const folderId = (await client.query<{ id: string }>('select id::text from file_share.entries where path = $1', [`/${name}`])).rows[0]!.id;
    await client.query(
      `
      insert into file_share.entries (parent_id, name, path, kind, size, sha256, storage_key)
      select $1::bigint, 'file-' || lpad(i::text, 5, '0') || '.bin', $2 || '/file-' || lpad(i::text, 5, '0') || '.bin',
             'file', i, encode(sha256(i::text::bytea), 'hex'), 'files/bench-' || $3 || '-' || i
      from generate_series(1, $4::int) i`,
      [folderId, `/${name}`, name, LISTING_ENTRIES],
    );
  } finally {
    await client.end();
  }
  return { url: `${base}/${name}/?limit=${LISTING_ENTRIES}`, token };
}

const listingLoad: Load = {
  name: `file-share JSON listing, ${LISTING_ENTRIES.toLocaleString('en')} entries (8 clients, 5 s)`,
  async prepare(product) {
    const { url, token } = await listingFolder(product, 'big');
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    return async () => `${round((await loadGet(url, { seconds: 5, connections: 8, headers })).rps, 0)} req/s`;
  },
};

/** What browsers and `wget --mirror` read: the same size of folder as an HTML page. */
const htmlListingLoad: Load = {
  name: `file-share HTML listing, ${LISTING_ENTRIES.toLocaleString('en')} entries (8 clients, 5 s)`,
  async prepare(product) {
    const { url, token } = await listingFolder(product, 'big-html');
    const headers = { authorization: `Bearer ${token}`, accept: 'text/html' };
    return async () => `${round((await loadGet(url, { seconds: 5, connections: 8, headers })).rps, 0)} req/s`;
  },
};

const TERMINAL_SESSIONS = 8;
const terminalLoad: Load = {
  name: `terminal (${TERMINAL_SESSIONS} sessions started, typed into, stopped)`,
  async prepare(product) {
    const base = product.urls.terminal!;
    const cookie = await login(base, product.adminPassword);
    return async (roundNumber) => {
      await Promise.all(
        Array.from({ length: TERMINAL_SESSIONS }, async (_, i) => {
          const session = await startSession(base, cookie, `bench-memory-${roundNumber}-${i}`);
          const socket = new WebSocket(`${base.replace('http', 'ws')}${session.path}`, { headers: { cookie }, perMessageDeflate: false });
          await once(socket, 'open');
          let seen = '';
          const marker = `typed-${roundNumber}-${i}-done`;
          const echoed = new Promise<void>((resolve) =>
            socket.on('message', (data: Buffer, binary: boolean) => {
              if (binary) seen = (seen + data.toString('latin1')).slice(-4096);
              if (seen.includes(marker)) resolve();
            }),
          );
          // Some typing (a line at a time, as a user would), then output the shell makes, then the marker.
          for (let line = 0; line < 20; line++) socket.send(Buffer.from(`echo line ${line} of ${'x'.repeat(60)}\r`), { binary: true });
          // The echoed command line shows `…-""done`, only the command's output shows the marker itself.
          socket.send(Buffer.from(`seq 1 20000; echo ${marker.replace('-done', '-""done')}\r`), { binary: true });
          await echoed;
          socket.close();
          await stopSession(base, cookie, session.id);
        }),
      );
      return `${TERMINAL_SESSIONS} sessions`;
    };
  },
};

export const loads = [metadataLoad, transferLoad, listingLoad, htmlListingLoad, terminalLoad];

/**
 * Where a process's memory is, to say what stays after a load: V8's heap (committed and in use), the memory behind
 * Buffers (external, of which ArrayBuffers), and the rest of the anonymous RSS (malloc's arenas: the thread pool's
 * work, pg's and the HTTP parser's buffers, V8's own code and metadata).
 */
async function breakdown(product: Product): Promise<string> {
  const usage = JSON.parse(
    (
      await product.inspect<{ result: { value: string } }>([
        { method: 'Runtime.evaluate', params: { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true } },
      ])
    ).result.value,
  ) as NodeJS.MemoryUsage;
  const anon = await statusField(product.pid, 'RssAnon');
  const file = await statusField(product.pid, 'RssFile');
  const mib = (n: number) => `${round(n / MiB, 0)}`;
  return (
    `V8 heap ${mib(usage.heapTotal)} (in use ${mib(usage.heapUsed)}), external ${mib(usage.external)} (ArrayBuffers ${mib(usage.arrayBuffers)}), ` +
    `other anonymous ${mib(anon - usage.heapTotal - usage.arrayBuffers)}, file-backed ${mib(file)} MiB`
  );
}

/** Every load once, one after another (as a day of mixed use), then RSS 60 s after the last one, and where it is. */
async function sequenceRows(product: Product, runs: { name: string; run: (round: number) => Promise<string> }[], idle: number): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const achieved: string[] = [];
  const peak = await peakDuring(product.pid, async () => {
    for (const { run } of runs) achieved.push(await run(ROUNDS));
  });
  progress(rows, {
    name: `all loads back to back (${runs.length}): peak RSS (${achieved.join(' / ')})`,
    value: round(peak / MiB),
    unit: 'MiB',
    baseline: round(idle / MiB),
    ratio: round(peak / idle, 2),
  });
  await sleep(SETTLE_SECONDS * 1000);
  const after = await rssOf(product.pid);
  const where = await breakdown(product);
  progress(rows, {
    name: `all loads back to back: RSS ${SETTLE_SECONDS} s after the last (vs idle after start; ${where})`,
    value: round(after / MiB),
    unit: 'MiB',
    baseline: round(idle / MiB),
    ratio: round(after / idle, 2),
    goal: '≤ 1.20×',
    pass: after <= 1.2 * idle,
  });
  return rows;
}

export async function benchMemory(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const product = await startProduct(env);
  // BENCH_MEMORY_SEQUENCE_ONLY=1: only the loads back to back (a quicker run while looking for what stays).
  const sequenceOnly = process.env.BENCH_MEMORY_SEQUENCE_ONLY === '1';
  try {
    await sleep(5000); // start-up's own work (migrations, first GCs) settles
    const idle = await rssOf(product.pid);
    const idleHeap = await product.heapAfterGc();
    progress(rows, {
      name: `idle RSS after start (heap in use after GC ${round(idleHeap / MiB)} MiB; ${await breakdown(product)})`,
      value: round(idle / MiB),
      unit: 'MiB',
      goal: '≤ 300 MiB',
      pass: idle <= IDLE_GOAL,
    });
    const runs: { name: string; run: (round: number) => Promise<string> }[] = [];
    for (const load of loads) {
      const run = await load.prepare(product);
      runs.push({ name: load.name, run });
      if (sequenceOnly) continue;
      const heaps: number[] = [];
      const achieved: string[] = [];
      let peak = 0;
      for (let i = 0; i < ROUNDS; i++) {
        peak = Math.max(peak, await peakDuring(product.pid, async () => void achieved.push(await run(i))));
        // The last round's GC comes after the settle time: a forced GC would make the RSS a user sees look better.
        if (i < ROUNDS - 1) heaps.push(await product.heapAfterGc());
      }
      await sleep(SETTLE_SECONDS * 1000);
      const after = await rssOf(product.pid);
      heaps.push(await product.heapAfterGc());
      const growth = heaps.at(-1)! - heaps[0]!;
      const tolerance = heapTolerance(heaps[0]!);
      progress(rows, {
        name: `${load.name}: peak RSS (rounds: ${achieved.join(' / ')})`,
        value: round(peak / MiB),
        unit: 'MiB',
        baseline: round(idle / MiB),
        ratio: round(peak / idle, 2),
      });
      progress(rows, {
        name: `${load.name}: heap after GC, rounds ${heaps.map((h) => round(h / MiB)).join(' / ')} MiB (growth 3 vs 1)`,
        value: round(growth / MiB),
        unit: 'MiB',
        goal: `≤ ${round(tolerance / MiB)} MiB`,
        pass: growth <= tolerance,
      });
      progress(rows, {
        name: `${load.name}: RSS ${SETTLE_SECONDS} s after (vs idle after start)`,
        value: round(after / MiB),
        unit: 'MiB',
        baseline: round(idle / MiB),
        ratio: round(after / idle, 2),
        goal: '≤ 1.20×',
        pass: after <= 1.2 * idle,
      });
    }
    rows.push(...(await sequenceRows(product, runs, idle)));
  } finally {
    await product.stop();
  }
  return rows;
}
