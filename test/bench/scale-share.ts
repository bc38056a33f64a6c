// `make bench ONLY=scale-share` (issue 35, part 2, items 3 and 4): how the file share's costs grow with its data,
// on the one-process product as `make run` runs it (memory.ts startProduct: every service in one Node process,
// embedded PostgreSQL, local storage), each figure at two sizes in the same run with both values, their ratio, the
// growth exponent (scale.ts growthRow) and the goal.
//  3. A big share: 100 folders x 1,000 files plus a folder `big` of 10,000, then 1,000 folders x 1,000 files plus
//     `big` of 100,000 (built by SQL: scale-share-data.ts). At each size: JSON pages of `big` (the first; the last
//     by `?page=`; the last by the `next` cursor) at 8 clients against the page of a 2,000-entry folder measured
//     right beside them; the same pages uncached (a listing cache miss, one client); search by name substring and by
//     checksum at 4 clients; `wget --mirror` of `big` (every HTML page, the files skipped) with the service's
//     peak RSS during it. Then the RSS 30 s after the last load.
//  4. Small files: 10,000 uploads of 10 KiB at 8 clients (raw body, API key) against the same client PUTting the
//     same files to put-server.ts (temporary file, fsync, rename, directory fsync: the durability the product's
//     local storage gives an upload), then every file's sha256 read back from the folder's listing and a sample of
//     files downloaded and compared.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { Pool } from 'undici';
import { progress } from './downloads.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { startBaselineServer } from './metadata.ts';
import { loadGet, round, type LoadResult } from './load.ts';
import { peakDuring, rssOf, startProduct } from './memory.ts';
import { growthRow } from './scale.ts';
import { profileLoad } from './scale-share-profile.ts';
import { addFolders, addToFolder, fileName, settle, SHARE_SQL_NOTE } from './scale-share-data.ts';

const run = promisify(execFile);
const putServerScript = fileURLToPath(new URL('./put-server.ts', import.meta.url));
const MiB = 1024 * 1024;
const seconds = 4;
const PAGE = 1000;
const SMALL_FILES = 10_000;
const SMALL_BYTES = 10 * 1024;
const SETTLE_SECONDS = 30;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `requests` (method, path, body) spread over `connections` keep-alive clients; each answer must be `expect`. */
async function loadRequests(
  origin: string,
  options: {
    connections: number;
    headers: Record<string, string>;
    expect: number;
    /** The next request, or undefined when there is none; `seconds` bounds the run when it never ends. */
    next(): { method: 'GET' | 'POST' | 'PUT'; path: string; body?: Buffer | string } | undefined;
    seconds?: number;
    onAnswer?(path: string, text: string): void;
  },
): Promise<LoadResult & { count: number }> {
  const pool = new Pool(origin, { connections: options.connections, pipelining: 1 });
  const latencies: number[] = [];
  const deadline = options.seconds ? process.hrtime.bigint() + BigInt(options.seconds * 1e9) : undefined;
  const started = process.hrtime.bigint();
  try {
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        for (let request = options.next(); request && (!deadline || process.hrtime.bigint() < deadline); request = options.next()) {
          const t0 = process.hrtime.bigint();
          const response = await pool.request({ ...request, headers: options.headers });
          const text = await response.body.text();
          if (response.statusCode !== options.expect) throw new Error(`${request.method} ${request.path}: ${response.statusCode} ${text.slice(0, 200)}`);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          options.onAnswer?.(request.path, text);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length,
    rps: latencies.length / (Number(process.hrtime.bigint() - started) / 1e9),
    p99Ms: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
    meanMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
  };
}

async function startPutServer(dir: string) {
  await mkdir(dir, { recursive: true });
  return startBaselineServer(putServerScript, dir);
}

interface Share {
  base: string;
  admin: string;
  key: string;
  pid: number;
  db: pg.Client;
  home: string;
}

/** CPU-seconds (user + system) `pid` has used so far. */
async function cpuOf(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU-seconds of the product's PostgreSQL so far: its postmaster and every process it started that is still running. */
async function postgresCpu(home: string): Promise<number> {
  const each = await Promise.all((await postgresPids(home)).map((pid) => cpuOf(pid).catch(() => 0)));
  return each.reduce((a, b) => a + b, 0);
}

/** The product's postmaster and the processes it started that are still running. */
async function postgresPids(home: string): Promise<number[]> {
  const postmaster = (await run('pgrep', ['-o', '-f', `${home}/postgres`])).stdout.trim();
  const children = (await run('pgrep', ['-P', postmaster]).catch(() => ({ stdout: '' }))).stdout.split('\n').filter(Boolean);
  return [postmaster, ...children].map(Number);
}

/** Item 4: the small files through the product and through put-server.ts, then their checksums read back. */
async function smallFiles(env: BenchEnv, share: Share): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const files = Array.from({ length: SMALL_FILES }, () => randomBytes(SMALL_BYTES));
  const sums = files.map((data) => createHash('sha256').update(data).digest('hex'));
  const sender = (path: (i: number) => string, method: 'POST' | 'PUT') => {
    let i = 0;
    return () => (i < files.length ? { method, path: path(i), body: files[i++]! } : undefined);
  };
  const baseline = await startPutServer(join(env.workDir, `scale-share-put-${randomBytes(4).toString('hex')}`));
  let plain: LoadResult;
  let plainCpu: number;
  try {
    const before = await cpuOf(baseline.pid);
    plain = await loadRequests(baseline.url, {
      connections: 8,
      headers: { 'content-type': 'application/octet-stream' },
      expect: 201,
      next: sender((i) => `/f-${i}.bin`, 'PUT'),
    });
    plainCpu = (await cpuOf(baseline.pid)) - before;
  } finally {
    await baseline.stop();
  }
  await fetch(`${share.base}/folders`, {
    method: 'POST',
    headers: { authorization: share.admin, 'content-type': 'application/json' },
    body: JSON.stringify({ folderName: 'small' }),
  });
  const stored = new Map<string, string>();
  const cpuBefore = { node: await cpuOf(share.pid), postgres: await postgresCpu(share.home) };
  const profile = await profileLoad(share.db, () => postgresPids(share.home));
  const product = await loadRequests(share.base, {
    connections: 8,
    headers: { authorization: `Bearer ${share.key}`, 'content-type': 'application/octet-stream' },
    expect: 201,
    next: sender((i) => `/small/f-${i}.bin`, 'POST'),
    onAnswer: (path, text) => stored.set(path, (JSON.parse(text) as { data: { file: { checksum: string } } }).data.file.checksum),
  });
  await profile.stop(SMALL_FILES);
  const perFile = (seconds: number) => round((seconds * 1000) / SMALL_FILES, 2);
  const cpu = `CPU ms per file: product ${perFile((await cpuOf(share.pid)) - cpuBefore.node)} + its PostgreSQL ${perFile((await postgresCpu(share.home)) - cpuBefore.postgres)}, put-server ${perFile(plainCpu)}`;
  // Every file's checksum as its listing shows it, and a sample downloaded.
  const listing = (await (
    await fetch(`${share.base}/small/?limit=${SMALL_FILES}`, { headers: { authorization: `Bearer ${share.key}`, accept: 'application/json' } })
  ).json()) as { total: number; files: { name: string; checksum: string }[] };
  const listed = new Map(listing.files.map((f) => [f.name, f.checksum]));
  let wrong = files.filter((_, i) => listed.get(`f-${i}.bin`) !== sums[i] || stored.get(`/small/f-${i}.bin`) !== sums[i]).length;
  for (let i = 0; i < SMALL_FILES; i += 500) {
    const bytes = Buffer.from(await (await fetch(`${share.base}/small/f-${i}.bin`, { headers: { authorization: `Bearer ${share.key}` } })).arrayBuffer());
    if (createHash('sha256').update(bytes).digest('hex') !== sums[i]) wrong++;
  }
  const ratio = product.rps / plain.rps;
  progress(rows, {
    name: `small files: ${SMALL_FILES.toLocaleString('en')} uploads of 10 KiB, 8 clients, vs put-server.ts PUT (p99 ${round(product.p99Ms, 1)} vs ${round(plain.p99Ms, 1)} ms; ${cpu})`,
    value: round(product.rps),
    unit: 'files/s',
    baseline: round(plain.rps),
    ratio: round(ratio, 3),
    goal: '≥ 0.50×',
    pass: ratio >= 0.5,
  });
  progress(rows, {
    name: `small files: sha256 wrong or missing (all ${listing.total.toLocaleString('en')} listed and answered; 20 downloaded)`,
    value: wrong,
    unit: 'files',
    goal: '= 0',
    pass: wrong === 0 && listing.total === SMALL_FILES,
  });
  return rows;
}

interface SizeFigures {
  twoK: LoadResult;
  first: LoadResult;
  deepPage: LoadResult;
  deepCursor: LoadResult;
  uncachedFirstMs: number;
  uncachedDeepMs: number;
  byName: LoadResult;
  byChecksum: LoadResult;
  mirror: { seconds: number; pages: number; peakAboveMiB: number };
}

/** The `next` cursor of the last page of `path`, by following the listing's `next` as a client does. */
async function lastCursor(share: Share, path: string): Promise<string> {
  let cursor = '';
  for (;;) {
    const body = (await (
      await fetch(`${share.base}${path}?limit=${PAGE}${cursor ? `&after=${cursor}` : ''}`, {
        headers: { authorization: `Bearer ${share.key}`, accept: 'application/json' },
      })
    ).json()) as { next: string | null };
    if (!body.next) return cursor;
    cursor = body.next;
  }
}

/** Median latency of single requests the listing cache cannot answer (each asks a page size no other asked). */
async function uncachedMs(share: Share, url: (limit: number) => string): Promise<number> {
  const times: number[] = [];
  for (let i = 1; i <= 11; i++) {
    const t0 = process.hrtime.bigint();
    const response = await fetch(`${share.base}${url(PAGE - i)}`, { headers: { authorization: `Bearer ${share.key}`, accept: 'application/json' } });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`uncached listing: ${response.status}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times.sort((a, b) => a - b)[5]!;
}

/** `wget --mirror` of the folder's HTML listing (its pages, not the files' bytes), with the service's peak RSS. */
async function mirror(env: BenchEnv, share: Share, path: string): Promise<SizeFigures['mirror']> {
  const dest = join(env.workDir, `scale-share-wget-${randomBytes(4).toString('hex')}`);
  await mkdir(dest);
  const before = await rssOf(share.pid);
  const t0 = process.hrtime.bigint();
  const peak = await peakDuring(share.pid, async () => {
    await run(
      'wget',
      [
        '--mirror',
        '--no-parent',
        '-e',
        'robots=off',
        '--reject-regex',
        '\\.dat$',
        '-q',
        '--header',
        `Authorization: Bearer ${share.key}`,
        '-P',
        dest,
        `${share.base}${path}`,
      ],
      { maxBuffer: 16 * MiB },
    );
  });
  const took = Number(process.hrtime.bigint() - t0) / 1e9;
  const { stdout } = await run('find', [dest, '-type', 'f']);
  return { seconds: took, pages: stdout.split('\n').filter(Boolean).length, peakAboveMiB: (peak - before) / MiB };
}

async function sizeFigures(env: BenchEnv, share: Share, bigEntries: number): Promise<SizeFigures> {
  const headers = { authorization: `Bearer ${share.key}`, accept: 'application/json' };
  const get = (path: string) => loadGet(`${share.base}${path}`, { seconds, connections: 8, headers });
  const lastPage = Math.ceil(bigEntries / PAGE);
  const cursor = await lastCursor(share, '/big/');
  await get(`/big/?limit=${PAGE}`); // warm
  const search = (query: string) =>
    loadRequests(share.base, {
      connections: 4,
      seconds,
      headers: { authorization: `Bearer ${share.key}`, 'content-type': 'application/json' },
      expect: 200,
      next: () => ({ method: 'POST', path: '/search', body: JSON.stringify({ query, limit: 100 }) }),
    });
  return {
    twoK: await get(`/two-k/?limit=${PAGE}`),
    first: await get(`/big/?limit=${PAGE}`),
    deepPage: await get(`/big/?limit=${PAGE}&page=${lastPage}`),
    deepCursor: await get(`/big/?limit=${PAGE}&after=${cursor}`),
    uncachedFirstMs: await uncachedMs(share, (limit) => `/big/?limit=${limit}`),
    uncachedDeepMs: await uncachedMs(share, (limit) => `/big/?limit=${limit}&page=${Math.ceil(bigEntries / limit)}`),
    byName: await search('54321'),
    byChecksum: await search(createHash('sha256').update(fileName(54_321)).digest('hex')),
    mirror: await mirror(env, share, '/big/'),
  };
}

function shareRows(small: SizeFigures, large: SizeFigures): BenchRow[] {
  const sizes: [number, number] = [10_000, 100_000];
  const shareSizes: [number, number] = [110_000, 1_100_000];
  const vsTwoK = (name: string, pick: (f: SizeFigures) => LoadResult) => {
    const ratio = pick(large).rps / large.twoK.rps;
    return growthRow({
      name: `JSON listing of \`big\`, ${name}, ${PAGE} entries, 8 clients`,
      unit: 'req/s',
      small: pick(small).rps,
      large: pick(large).rps,
      sizes,
      kind: 'rate',
      goal: `≥ 0.80× a 2,000-entry folder's page (${round(large.twoK.rps, 0)} req/s): ${round(ratio, 2)}×`,
      pass: ratio >= 0.8,
    });
  };
  const cost = (name: string, pick: (f: SizeFigures) => number, sizesOf: [number, number], goal: string, pass: boolean, unit = 'ms') =>
    growthRow({ name, unit, small: pick(small), large: pick(large), sizes: sizesOf, kind: 'cost', goal, pass });
  const peakGoal = 64;
  return [
    { name: `share: 1,000 folders x 1,000 files + \`big\` of 100,000 + \`two-k\` of 2,000; ${SHARE_SQL_NOTE}`, value: 1_102_000, unit: 'files' },
    growthRow({
      name: `JSON listing of \`two-k\` (2,000 entries), first ${PAGE}, 8 clients, as the share grows`,
      unit: 'req/s',
      small: small.twoK.rps,
      large: large.twoK.rps,
      sizes: shareSizes,
      kind: 'rate',
      goal: '(the baseline of the rows below)',
      pass: true,
    }),
    vsTwoK('first page', (f) => f.first),
    vsTwoK('last page by `?page=`', (f) => f.deepPage),
    vsTwoK('last page by the `next` cursor', (f) => f.deepCursor),
    cost('JSON listing of `big`, first page, uncached (1 client, median of 11)', (f) => f.uncachedFirstMs, sizes, '(cache miss: the query itself)', true),
    cost(
      'JSON listing of `big`, last page by `?page=`, uncached (1 client, median of 11)',
      (f) => f.uncachedDeepMs,
      sizes,
      '(cache miss: the query itself)',
      true,
    ),
    cost('search by name substring ("54321", whole share) p99, 4 clients', (f) => f.byName.p99Ms, shareSizes, '≤ 100 ms', large.byName.p99Ms <= 100),
    cost('search by checksum (64 hex digits, whole share) p99, 4 clients', (f) => f.byChecksum.p99Ms, shareSizes, '≤ 10 ms', large.byChecksum.p99Ms <= 10),
    cost(
      `wget --mirror of \`big\` (HTML pages: ${small.mirror.pages} → ${large.mirror.pages}), seconds`,
      (f) => f.mirror.seconds,
      sizes,
      '(linear: every entry is sent)',
      true,
      's',
    ),
    cost(
      'wget --mirror of `big`: peak RSS of the product above its RSS before',
      (f) => Math.max(0.1, f.mirror.peakAboveMiB),
      sizes,
      `≤ ${peakGoal} MiB at both sizes`,
      small.mirror.peakAboveMiB <= peakGoal && large.mirror.peakAboveMiB <= peakGoal,
      'MiB',
    ),
  ];
}

/** Item 3: the big share at two sizes. */
async function bigShare(env: BenchEnv, share: Share): Promise<BenchRow[]> {
  const { db } = share;
  await addToFolder(db, '/two-k', 1, 2000, 'two-k');
  let t0 = Date.now();
  await addFolders(db, { from: 1, to: 100_000, perFolder: 1000 });
  await addToFolder(db, '/big', 1, 10_000, 'big');
  await settle(db);
  console.error(`  [bench] share of 112,000 files built in ${round((Date.now() - t0) / 1000)} s`);
  const small = await sizeFigures(env, share, 10_000);
  t0 = Date.now();
  await addFolders(db, { from: 100_001, to: 1_000_000, perFolder: 1000 });
  await addToFolder(db, '/big', 10_001, 100_000, 'big');
  await settle(db);
  console.error(`  [bench] share grown to 1,102,000 files in ${round((Date.now() - t0) / 1000)} s`);
  const large = await sizeFigures(env, share, 100_000);
  const rows = shareRows(small, large);
  for (const row of rows) console.error(`  [bench] ${row.name}: ${row.value} ${row.unit} vs ${row.baseline ?? '-'}`);
  return rows;
}

export async function benchScaleShare(env: BenchEnv): Promise<BenchRow[]> {
  const product = await startProduct(env);
  const secrets = JSON.parse(await readFile(join(product.home, 'secrets.json'), 'utf8')) as { postgres_password: string };
  const db = new pg.Client({
    connectionString: `postgres://postgres:${encodeURIComponent(secrets.postgres_password)}@127.0.0.1:${product.postgresPort}/boxyard`,
  });
  try {
    await sleep(5000); // start-up's own work settles
    const idle = await rssOf(product.pid);
    await db.connect();
    await db.query('set search_path = file_share');
    const base = product.urls['file-share']!;
    const admin = `Basic ${Buffer.from(`admin:${product.adminPassword}`).toString('base64')}`;
    const keyResponse = await fetch(`${base}/api/api-keys`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench-scale', permissions: ['downloads', 'uploads'] }),
    });
    const key = ((await keyResponse.json()) as { data: { token: string } }).data.token;
    const share: Share = { base, admin, key, pid: product.pid, db, home: product.home };
    // SCALE_SHARE_PART=small-files or big-share runs one part (exploring a change); the report wants both.
    const part = process.env.SCALE_SHARE_PART;
    const rows = [...(part === 'big-share' ? [] : await smallFiles(env, share)), ...(part === 'small-files' ? [] : await bigShare(env, share))];
    await sleep(SETTLE_SECONDS * 1000);
    const after = await rssOf(product.pid);
    const usage = JSON.parse(
      (
        await product.inspect<{ result: { value: string } }>([
          { method: 'Runtime.evaluate', params: { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true } },
        ])
      ).result.value,
    ) as NodeJS.MemoryUsage;
    const where = `V8 heap ${round(usage.heapTotal / MiB, 0)} (in use ${round(usage.heapUsed / MiB, 0)}), external ${round(usage.external / MiB, 0)} MiB`;
    progress(rows, {
      name: `\`make run\` process RSS ${SETTLE_SECONDS} s after all of the above (vs idle after start; ${where})`,
      value: round(after / MiB),
      unit: 'MiB',
      baseline: round(idle / MiB),
      ratio: round(after / idle, 2),
      goal: '≤ 300 MiB',
      pass: after <= 300 * MiB,
    });
    return rows;
  } finally {
    await db.end().catch((error: Error) => console.error(`  [bench] closing the database client: ${error.message}`));
    await product.stop();
  }
}
