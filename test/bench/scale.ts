// `make bench ONLY=scale` (issue 35, part 2): how the box repository's costs grow with its data. Each figure is
// measured at two sizes in the same run and printed with both values, their ratio, the growth exponent (the
// log-log slope of the cost: 0 = independent of the size, 1 = linear) and the goal.
//
// The catalogue is built by SQL (scale-data.ts says what it inserts and why that equals the API's writes); the
// box whose metadata is measured, and the wide box's first version, are made through the API.
// Rows: 1. a box catalogue of 10 and of 100 organizations x 100 boxes x 10 versions (10,000 and 100,000 versions);
// 2. a wide box of 100 and of 1,000 versions x 2 providers x 2 architectures. Each size is a repository of its own,
// running side by side, so the two sizes of a figure are measured one right after the other: on a shared machine
// the load moves by the minute (a catalogue grown in place was measured minutes after the small one). The p99 rows
// come with the CPU each request took (service process and PostgreSQL backends): what the row needs of the 2 cores.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createPublicBox, generatedBox, httpUpload, startService, type Service } from './box-repository.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';
import { alternate, loadGet, median, round, type LoadResult } from './load.ts';
import { startStaticServer } from './metadata.ts';
import { addCatalogue, addWideVersions, CATALOGUE_SQL_NOTE, settle } from './scale-data.ts';
import { cpuOf } from './scale-procs.ts';

const seconds = 4;

/** One figure at two sizes: both, the ratio, the exponent of the cost, the goal. */
export function growthRow(options: {
  name: string;
  unit: string;
  small: number;
  large: number;
  sizes: [number, number];
  /** `rate`: the cost is 1/value (req/s); `cost`: the value is the cost (ms). */
  kind: 'rate' | 'cost';
  goal: string;
  pass: boolean;
}): BenchRow {
  const { small, large, sizes, kind } = options;
  const costRatio = kind === 'rate' ? small / large : large / small;
  const exponent = Math.log(costRatio) / Math.log(sizes[1] / sizes[0]);
  return {
    name: `${options.name} (${sizes[0].toLocaleString('en')} → ${sizes[1].toLocaleString('en')}; growth exponent ${round(exponent, 2)})`,
    value: round(large, kind === 'rate' ? 0 : 2),
    unit: options.unit,
    baseline: round(small, kind === 'rate' ? 0 : 2),
    ratio: round(large / small, 3),
    goal: options.goal,
    pass: options.pass,
  };
}

const measure = (url: string, connections: number, duration = seconds) => loadGet(url, { seconds: duration, connections });

interface Repository {
  service: Service;
  db: pg.Client;
  adminPassword: string;
}

async function startRepository(env: BenchEnv): Promise<Repository> {
  const databaseUrl = await createBenchDatabase(env, `bench_scale_${randomBytes(4).toString('hex')}`);
  const root = join(env.workDir, `scale-boxes-${randomBytes(4).toString('hex')}`);
  await mkdir(root, { recursive: true });
  const adminPassword = `Bench-${randomBytes(12).toString('base64url')}1a`;
  const service = await startService({
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl },
    storage: { driver: 'local', root },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: adminPassword },
    rate_limiting: { enabled: false },
  });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query('set search_path = box_repository');
  return { service, db, adminPassword };
}

async function stopRepositories(repositories: Repository[]): Promise<void> {
  for (const { db, service } of repositories) {
    await db.end();
    await service.stop();
  }
}

/** A figure with what it cost: CPU milliseconds per request of the service's process and of its PostgreSQL backends. */
interface Figure extends LoadResult {
  serviceCpuMs: number;
  postgresCpuMs: number;
}

const backendPids = async (db: pg.Client) =>
  (await db.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map((r) => r.pid);

/** GET `path` of the repository under load, with the CPU it took (per request, from /proc). */
async function measureFigure(repository: Repository, path: string, connections: number): Promise<Figure> {
  const { service, db } = repository;
  // One request first: the figure is the steady state, not its first requests filling the caches (the search's
  // per-box documents: 8 clients' first pages built at once were the 1% slowest of ~600).
  await (await fetch(`${service.url}${path}`)).arrayBuffer();
  const before = new Map((await backendPids(db)).map((pid) => [pid, cpuOf(pid)]));
  const serviceBefore = cpuOf(service.pid);
  const result = await measure(`${service.url}${path}`, connections);
  const serviceCpu = cpuOf(service.pid) - serviceBefore;
  // Backends the pool opened during the load started at 0.
  const postgresCpu = (await backendPids(db)).reduce((sum, pid) => sum + cpuOf(pid) - (before.get(pid) ?? 0), 0);
  const requests = Math.max(1, result.rps * seconds);
  return { ...result, serviceCpuMs: (1000 * serviceCpu) / requests, postgresCpuMs: (1000 * postgresCpu) / requests };
}

/** A public box `bench/meta` with 3 versions of one file each, made through the API. */
async function addMetaBox({ service, adminPassword }: Repository): Promise<void> {
  const { token, uploadUrl } = await createPublicBox(service.url, adminPassword, { org: 'bench', box: 'meta', versions: ['1.0.0', '1.1.0', '2.0.0'] });
  for (const version of ['1.0.0', '1.1.0', '2.0.0']) await httpUpload(uploadUrl(version), { 'x-access-token': token }, generatedBox(4096));
}

/** The console's search is paged by keyset: its `after` cursor on page `pages + 1`, reached by following Next. */
async function deepCursor(base: string, pages: number): Promise<string> {
  let cursor = '';
  for (let page = 1; page <= pages; page++) {
    const text = await (await fetch(`${base}/?q=box${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`)).text();
    const next = /[?&]after=([^"&]+)" rel="next"/.exec(text)?.[1];
    if (!next) break;
    cursor = decodeURIComponent(next);
  }
  return cursor;
}

const tags = async (url: string) => ((await (await fetch(url)).json()) as { boxes: { tag: string }[] }).boxes.map((b) => b.tag);

/**
 * The search API's page `page` by its keyset cursor: the next link of page `page - 1` (which that page's answer
 * carries; reached here directly, not by following 499 links), checked to hold the same boxes as `page=` does.
 */
async function searchCursorPath(base: string, query: string, page: number): Promise<string> {
  const before = await fetch(`${base}/api/v1/search?${query}&page=${page - 1}`);
  await before.arrayBuffer();
  const next = before.headers
    .get('link')
    ?.split(', ')
    .find((entry) => entry.endsWith('>; rel="next"'))
    ?.slice(1, -'>; rel="next"'.length);
  if (!next) throw new Error(`search page ${page - 1} has no next link`);
  const [byCursor, byPage] = [await tags(`${base}${next}`), await tags(`${base}/api/v1/search?${query}&page=${page}`)];
  if (byCursor.length === 0 || byCursor.join() !== byPage.join())
    throw new Error(`search page ${page}: the cursor gives ${byCursor.join()}, page= gives ${byPage.join()}`);
  return next;
}

const search = 'q=box&limit=10';
/** The catalogue's figures at 8 clients: what each of them asks, at a catalogue whose deep search page is `deepPage`. */
async function catalogueFigurePaths(base: string, deepPage: number): Promise<Record<CatalogueFigure, string>> {
  return {
    list: '/api/organization/scale-org7/box?page=2&per_page=20',
    search: `/api/v1/search?${search}`,
    searchDeep: `/api/v1/search?${search}&page=${deepPage}`,
    searchCursor: await searchCursorPath(base, search, deepPage),
    console: '/?q=box',
    consoleDeep: `/?q=box&after=${encodeURIComponent(await deepCursor(base, Math.ceil(deepPage / 5)))}`,
  };
}
type CatalogueFigure = 'list' | 'search' | 'searchDeep' | 'searchCursor' | 'console' | 'consoleDeep';

const cpuRow = (name: string, figure: Figure): BenchRow => ({
  name: `${name}: CPU per request (service ${round(figure.serviceCpuMs, 2)} + PostgreSQL ${round(figure.postgresCpuMs, 2)} ms; mean latency ${round(figure.meanMs, 1)} ms)`,
  value: round(figure.serviceCpuMs + figure.postgresCpuMs, 2),
  unit: 'ms',
});

/**
 * Three repositories side by side, each with the box `bench/meta`: an empty catalogue, 10,000 and 100,000 versions.
 * Each figure is measured on the sizes one right after the other (the metadata in 3 alternating rounds, medians),
 * so a shared machine's load, which moves by the minute, weighs on both sizes alike.
 */
async function benchCatalogue(env: BenchEnv): Promise<BenchRow[]> {
  const repositories: Repository[] = [];
  try {
    for (let i = 0; i < 3; i++) repositories.push(await startRepository(env));
    const [empty, small, large] = repositories as [Repository, Repository, Repository];
    for (const repository of repositories) await addMetaBox(repository);
    await addCatalogue(small.db, { fromOrg: 1, orgs: 10, boxes: 100, versions: 10 });
    await addCatalogue(large.db, { fromOrg: 1, orgs: 100, boxes: 100, versions: 10 });
    for (const repository of repositories) await settle(repository.db);
    const metadataRounds = await alternate(3, {
      empty: () => measure(`${empty.service.url}/bench/meta`, 32),
      small: () => measure(`${small.service.url}/bench/meta`, 32),
      large: () => measure(`${large.service.url}/bench/meta`, 32),
    });
    const metadata = (name: 'empty' | 'small' | 'large') => median(metadataRounds[name]!.map((r) => r.rps));
    const paths = { small: await catalogueFigurePaths(small.service.url, 50), large: await catalogueFigurePaths(large.service.url, 500) };
    const figures = { small: {} as Record<CatalogueFigure, Figure>, large: {} as Record<CatalogueFigure, Figure> };
    for (const [index, name] of (Object.keys(paths.small) as CatalogueFigure[]).entries()) {
      // Alternating which size goes first, so neither always has the warmer machine.
      for (const size of index % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const)) {
        figures[size][name] = await measureFigure(size === 'small' ? small : large, paths[size][name], 8);
      }
    }
    const sizes: [number, number] = [10_000, 100_000];
    const p99 = (label: string, name: CatalogueFigure, goalMs: number): BenchRow[] => [
      growthRow({
        name: `${label} p99, 8 clients`,
        unit: 'ms',
        small: figures.small[name].p99Ms,
        large: figures.large[name].p99Ms,
        sizes,
        kind: 'cost',
        goal: `≤ ${goalMs} ms`,
        pass: figures.large[name].p99Ms <= goalMs,
      }),
      cpuRow(`${label}, 100,000 versions`, figures.large[name]),
    ];
    const { large: big } = figures;
    const metadataRatio = metadata('large') / metadata('empty');
    return [
      { name: `catalogue: ${CATALOGUE_SQL_NOTE}`, value: 100_000, unit: 'versions' },
      {
        name: 'metadata of one box, 32 clients: 100,000-version catalogue vs an empty one (side by side, 3 alternating rounds, medians)',
        value: round(metadata('large')),
        unit: 'req/s',
        baseline: round(metadata('empty')),
        ratio: round(metadataRatio, 3),
        goal: '≥ 0.90×',
        pass: metadataRatio >= 0.9,
      },
      growthRow({
        name: 'metadata of one box req/s, 32 clients',
        unit: 'req/s',
        small: metadata('small'),
        large: metadata('large'),
        sizes,
        kind: 'rate',
        goal: '≥ 0.90× of 10,000',
        pass: metadata('large') >= 0.9 * metadata('small'),
      }),
      ...p99("an organization's box list (API)", 'list', 50),
      ...p99('search API (/api/v1/search?q=box, page 1)', 'search', 50),
      ...p99('search API, deep page by page= (page 50 → 500)', 'searchDeep', 50),
      ...p99('search API, deep page by its next link (page 50 → 500)', 'searchCursor', 50),
      ...p99("console's search (/?q=box, page 1)", 'console', 50),
      ...p99("console's search, deep page (page 11 → 101, by its Next links)", 'consoleDeep', 50),
      // Cost as mean latency at 8 clients (8 / req/s): steadier than p99 on a shared machine. Both deep pages are
      // keyset walks: the next link's cursor, and page= from where page 500 starts (kept after its first request,
      // while the search generation holds: nothing changes during the load).
      {
        name: 'search API: page 500 by its next link (keyset) vs page 1, mean latency, 100,000 versions',
        value: round(big.searchCursor.meanMs, 2),
        unit: 'ms',
        baseline: round(big.search.meanMs, 2),
        ratio: round(big.searchCursor.meanMs / big.search.meanMs, 3),
        goal: '≤ 1.5×',
        pass: big.searchCursor.meanMs <= 1.5 * big.search.meanMs,
      },
      {
        name: 'search API: page 500 by page= (from its kept position) vs page 1, mean latency, 100,000 versions',
        value: round(big.searchDeep.meanMs, 2),
        unit: 'ms',
        baseline: round(big.search.meanMs, 2),
        ratio: round(big.searchDeep.meanMs / big.search.meanMs, 3),
        goal: '≤ 1.5×',
        pass: big.searchDeep.meanMs <= 1.5 * big.search.meanMs,
      },
    ];
  } finally {
    await stopRepositories(repositories);
  }
}

/** The wide box's metadata against a static server serving the same bytes (2 alternating rounds, medians). */
async function wideMetadata(env: BenchEnv, base: string, label: string) {
  const metadataUrl = `${base}/bench/wide`;
  const document = await (await fetch(metadataUrl)).text();
  const dir = join(env.workDir, `scale-static-${label}`);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'wide.json'), document);
  const baseline = await startStaticServer(dir);
  try {
    await measure(metadataUrl, 32, 2);
    await measure(`${baseline.url}/wide.json`, 32, 2);
    const rounds = await alternate(2, { metadata: () => measure(metadataUrl, 32), static: () => measure(`${baseline.url}/wide.json`, 32) });
    return { bytes: Buffer.byteLength(document), metadata: median(rounds.metadata!.map((r) => r.rps)), static: median(rounds.static!.map((r) => r.rps)) };
  } finally {
    await baseline.stop();
  }
}

/** Two repositories side by side, each with the box `bench/wide`: 100 and 1,000 versions x 2 providers x 2 architectures. */
async function benchWideBox(env: BenchEnv): Promise<BenchRow[]> {
  const repositories: Repository[] = [];
  try {
    for (const versions of [100, 1000]) {
      const repository = await startRepository(env);
      repositories.push(repository);
      const { token, uploadUrl } = await createPublicBox(repository.service.url, repository.adminPassword, { org: 'bench', box: 'wide', versions: ['0.0.1'] });
      await httpUpload(uploadUrl('0.0.1'), { 'x-access-token': token }, generatedBox(4096));
      await addWideVersions(repository.db, 'bench', 'wide', 2, versions);
      await settle(repository.db);
    }
    const [small, large] = repositories as [Repository, Repository];
    const metadata = { small: await wideMetadata(env, small.service.url, 'small'), large: await wideMetadata(env, large.service.url, 'large') };
    const page = { small: await measureFigure(small, '/bench/boxes/wide', 8), large: await measureFigure(large, '/bench/boxes/wide', 8) };
    const sizes: [number, number] = [100, 1000];
    const ratio = metadata.large.metadata / metadata.large.static;
    return [
      {
        name: `wide box metadata (1,000 versions x 2 providers x 2 architectures, ${Math.round(metadata.large.bytes / 1024)} KiB), 32 clients, vs a static server`,
        value: round(metadata.large.metadata),
        unit: 'req/s',
        baseline: round(metadata.large.static),
        ratio: round(ratio, 3),
        goal: '≥ 0.80×',
        pass: ratio >= 0.8,
      },
      growthRow({
        name: 'wide box metadata req/s, 32 clients',
        unit: 'req/s',
        small: metadata.small.metadata,
        large: metadata.large.metadata,
        sizes,
        kind: 'rate',
        goal: '(document grows 10×)',
        pass: true,
      }),
      growthRow({
        name: "wide box's console page p99, 8 clients",
        unit: 'ms',
        small: page.small.p99Ms,
        large: page.large.p99Ms,
        sizes,
        kind: 'cost',
        goal: '≤ 100 ms',
        pass: page.large.p99Ms <= 100,
      }),
      cpuRow("wide box's console page, 1,000 versions", page.large),
    ];
  } finally {
    await stopRepositories(repositories);
  }
}

export async function benchScale(env: BenchEnv): Promise<BenchRow[]> {
  const rows = [...(await benchCatalogue(env)), ...(await benchWideBox(env))];
  for (const row of rows) console.error(`  [bench] ${row.name}: ${row.value} ${row.unit} vs ${row.baseline ?? '-'}`);
  return rows;
}
