// `make bench ONLY=scale` (issue 35, part 2): how the box repository's costs grow with its data. Each figure is
// measured at two sizes in the same run and printed with both values, their ratio, the growth exponent (the
// log-log slope of the cost: 0 = independent of the size, 1 = linear) and the goal.
//
// The catalogue is built by SQL (scale-data.ts says what it inserts and why that equals the API's writes); the
// box whose metadata is measured, and the wide box's first version, are made through the API.
// Rows: 1. a box catalogue of 10 then 100 organizations x 100 boxes x 10 versions (10,000 then 100,000 versions);
// 2. a wide box of 100 then 1,000 versions x 2 providers x 2 architectures.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { createPublicBox, generatedBox, httpUpload, startService } from './box-repository.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';
import { loadGet, round, type LoadResult } from './load.ts';
import { startStaticServer } from './metadata.ts';
import { addCatalogue, addWideVersions, CATALOGUE_SQL_NOTE } from './scale-data.ts';

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

const measure = (url: string, connections: number) => loadGet(url, { seconds, connections });

async function startRepository(env: BenchEnv) {
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

interface CatalogueFigures {
  metadata: LoadResult;
  list: LoadResult;
  search: LoadResult;
  searchDeep: LoadResult;
  searchCursor: LoadResult;
  console: LoadResult;
  consoleDeep: LoadResult;
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
async function searchCursorUrl(base: string, query: string, page: number): Promise<string> {
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
  return `${base}${next}`;
}

async function catalogueFigures(base: string, deepPage: number): Promise<CatalogueFigures> {
  await measure(`${base}/bench/meta`, 8); // warm
  const search = 'q=box&limit=10';
  return {
    metadata: await measure(`${base}/bench/meta`, 32),
    list: await measure(`${base}/api/organization/scale-org7/box?page=2&per_page=20`, 8),
    search: await measure(`${base}/api/v1/search?${search}`, 8),
    searchDeep: await measure(`${base}/api/v1/search?${search}&page=${deepPage}`, 8),
    searchCursor: await measure(await searchCursorUrl(base, search, deepPage), 8),
    console: await measure(`${base}/?q=box`, 8),
    consoleDeep: await measure(`${base}/?q=box&after=${encodeURIComponent(await deepCursor(base, Math.ceil(deepPage / 5)))}`, 8),
  };
}

async function benchCatalogue(env: BenchEnv): Promise<BenchRow[]> {
  const { service, db, adminPassword } = await startRepository(env);
  try {
    const { token, uploadUrl } = await createPublicBox(service.url, adminPassword, { org: 'bench', box: 'meta', versions: ['1.0.0', '1.1.0', '2.0.0'] });
    for (const version of ['1.0.0', '1.1.0', '2.0.0']) await httpUpload(uploadUrl(version), { 'x-access-token': token }, generatedBox(4096));
    await measure(`${service.url}/bench/meta`, 32); // warm
    const empty = await measure(`${service.url}/bench/meta`, 32);
    await addCatalogue(db, { fromOrg: 1, orgs: 10, boxes: 100, versions: 10 });
    const small = await catalogueFigures(service.url, 50);
    await addCatalogue(db, { fromOrg: 11, orgs: 90, boxes: 100, versions: 10 });
    const large = await catalogueFigures(service.url, 500);
    const sizes: [number, number] = [10_000, 100_000];
    const p99 = (name: string, pick: (f: CatalogueFigures) => LoadResult, goalMs: number) =>
      growthRow({
        name: `${name} p99, 8 clients`,
        unit: 'ms',
        small: pick(small).p99Ms,
        large: pick(large).p99Ms,
        sizes,
        kind: 'cost',
        goal: `≤ ${goalMs} ms`,
        pass: pick(large).p99Ms <= goalMs,
      });
    const metadataRatio = large.metadata.rps / empty.rps;
    return [
      { name: `catalogue: ${CATALOGUE_SQL_NOTE}`, value: 100_000, unit: 'versions' },
      {
        name: 'metadata of one box, 32 clients: 100,000-version catalogue vs an empty one',
        value: round(large.metadata.rps),
        unit: 'req/s',
        baseline: round(empty.rps),
        ratio: round(metadataRatio, 3),
        goal: '≥ 0.90×',
        pass: metadataRatio >= 0.9,
      },
      growthRow({
        name: 'metadata of one box req/s, 32 clients',
        unit: 'req/s',
        small: small.metadata.rps,
        large: large.metadata.rps,
        sizes,
        kind: 'rate',
        goal: '≥ 0.90× of 10,000',
        pass: large.metadata.rps >= 0.9 * small.metadata.rps,
      }),
      p99("an organization's box list (API)", (f) => f.list, 50),
      p99('search API (/api/v1/search?q=box, page 1)', (f) => f.search, 50),
      p99('search API, deep page by page= (page 50 → 500)', (f) => f.searchDeep, 50),
      p99('search API, deep page by its next link (page 50 → 500)', (f) => f.searchCursor, 50),
      p99("console's search (/?q=box, page 1)", (f) => f.console, 50),
      p99("console's search, deep page (page 11 → 101, by its Next links)", (f) => f.consoleDeep, 50),
      // Cost as mean latency at 8 clients (8 / req/s): steadier than p99 on a shared machine. The goal is the
      // keyset's (the next link); page= still skips rows (over the index walk), shown without a goal.
      {
        name: 'search API: page 500 by its next link (keyset) vs page 1, mean latency, 100,000 versions',
        value: round(large.searchCursor.meanMs, 2),
        unit: 'ms',
        baseline: round(large.search.meanMs, 2),
        ratio: round(large.searchCursor.meanMs / large.search.meanMs, 3),
        goal: '≤ 1.5×',
        pass: large.searchCursor.meanMs <= 1.5 * large.search.meanMs,
      },
      {
        name: 'search API: page 500 by page= (skips 4,990 rows) vs page 1, mean latency, 100,000 versions',
        value: round(large.searchDeep.meanMs, 2),
        unit: 'ms',
        baseline: round(large.search.meanMs, 2),
        ratio: round(large.searchDeep.meanMs / large.search.meanMs, 3),
      },
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

/** The wide box at `versions` versions: its metadata vs a static server serving the same bytes, and its console page. */
async function wideFigures(env: BenchEnv, base: string, label: string) {
  const metadataUrl = `${base}/bench/wide`;
  const document = await (await fetch(metadataUrl)).text();
  const dir = join(env.workDir, `scale-static-${label}`);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'wide.json'), document);
  const baseline = await startStaticServer(dir);
  try {
    await measure(metadataUrl, 32);
    await measure(`${baseline.url}/wide.json`, 32);
    return {
      bytes: Buffer.byteLength(document),
      metadata: await measure(metadataUrl, 32),
      static: await measure(`${baseline.url}/wide.json`, 32),
      page: await measure(`${base}/bench/boxes/wide`, 8),
    };
  } finally {
    await baseline.stop();
  }
}

async function benchWideBox(env: BenchEnv): Promise<BenchRow[]> {
  const { service, db, adminPassword } = await startRepository(env);
  try {
    const { token, uploadUrl } = await createPublicBox(service.url, adminPassword, { org: 'bench', box: 'wide', versions: ['0.0.1'] });
    await httpUpload(uploadUrl('0.0.1'), { 'x-access-token': token }, generatedBox(4096));
    await addWideVersions(db, 'bench', 'wide', 2, 100);
    const small = await wideFigures(env, service.url, 'small');
    await addWideVersions(db, 'bench', 'wide', 101, 1000);
    const large = await wideFigures(env, service.url, 'large');
    const sizes: [number, number] = [100, 1000];
    const ratio = large.metadata.rps / large.static.rps;
    return [
      {
        name: `wide box metadata (1,000 versions x 2 providers x 2 architectures, ${Math.round(large.bytes / 1024)} KiB), 32 clients, vs a static server`,
        value: round(large.metadata.rps),
        unit: 'req/s',
        baseline: round(large.static.rps),
        ratio: round(ratio, 3),
        goal: '≥ 0.80×',
        pass: ratio >= 0.8,
      },
      growthRow({
        name: 'wide box metadata req/s, 32 clients',
        unit: 'req/s',
        small: small.metadata.rps,
        large: large.metadata.rps,
        sizes,
        kind: 'rate',
        goal: '(document grows 10×)',
        pass: true,
      }),
      growthRow({
        name: "wide box's console page p99, 8 clients",
        unit: 'ms',
        small: small.page.p99Ms,
        large: large.page.p99Ms,
        sizes,
        kind: 'cost',
        goal: '≤ 100 ms',
        pass: large.page.p99Ms <= 100,
      }),
    ];
  } finally {
    await db.end();
    await service.stop();
  }
}

export async function benchScale(env: BenchEnv): Promise<BenchRow[]> {
  const rows = [...(await benchCatalogue(env)), ...(await benchWideBox(env))];
  for (const row of rows) console.error(`  [bench] ${row.name}: ${row.value} ${row.unit} vs ${row.baseline ?? '-'}`);
  return rows;
}
