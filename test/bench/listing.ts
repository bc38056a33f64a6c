// `make bench ONLY=listing`: the file share's JSON listing of one folder (2,000 and 10,000 entries, one page) at
// 8 keep-alive clients with an API key, the service in its own process (`boxyard serve file-share`, local
// storage: a listing never touches storage), against a static file server serving the same JSON, in alternating
// rounds (medians of 3), plus each round's own figure (issue 13 asks for them steady across rounds).
// Goals (issue 13): 2,000 entries ≥ 300 req/s, 10,000 entries ≥ 80 req/s.
// Then the HTML listing of the 2,000-entry folder (what browsers and `wget --mirror` read) against the JSON listing
// of the same folder, in alternating rounds at 8 clients, with the service's peak RSS during the HTML rounds against
// its RSS before any load (issue 35: ≥ 0.5× the JSON req/s, peak ≤ idle + 64 MiB).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { progress } from './downloads.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';
import { alternate, loadGet, median, round } from './load.ts';
import { startStaticServer } from './metadata.ts';
import { peakDuring, rssOf } from './memory.ts';
import { startShareProcess } from './share-process.ts';

const connections = 8;
const seconds = 5;
const goals: Record<number, number> = { 2000: 300, 10000: 80 };
const MiB = 1024 * 1024;
const HTML_ENTRIES = 2000;
const HTML_RATIO_GOAL = 0.5;
const HTML_PEAK_GOAL = 64 * MiB;

export async function benchListing(env: BenchEnv): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const databaseUrl = await createBenchDatabase(env, `bench_listing_${randomBytes(4).toString('hex')}`);
  const dir = join(env.workDir, `listing-${randomBytes(4).toString('hex')}`);
  await mkdir(join(dir, 'storage'), { recursive: true });
  const adminPassword = `Bench-${randomBytes(6).toString('hex')}-1A`;
  const share = await startShareProcess(dir, {
    metrics: { port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl },
    storage: { driver: 'local', root: join(dir, 'storage') },
    rate_limiting: { enabled: false },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { username: 'admin', password: adminPassword },
  });
  const { url } = share;
  const staticDir = join(dir, 'static');
  await mkdir(staticDir);
  let baseline: { url: string; stop(): Promise<void> } | undefined;
  try {
    const admin = `Basic ${Buffer.from(`admin:${adminPassword}`).toString('base64')}`;
    const keyResponse = await fetch(`${url}/api/api-keys`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', permissions: ['downloads'] }),
    });
    const token = ((await keyResponse.json()) as { data: { token: string } }).data.token;
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    for (const entries of [2000, 10000]) {
      const folder = `list${entries}`;
      await fetch(`${url}/folders`, {
        method: 'POST',
        headers: { authorization: admin, 'content-type': 'application/json' },
        body: JSON.stringify({ folderName: folder }),
      });
      const folderId = (await client.query<{ id: string }>('select id::text from file_share.entries where path = $1', [`/${folder}`])).rows[0]!.id;
      await client.query(
        `
        insert into file_share.entries (parent_id, name, path, kind, size, sha256, storage_key)
        select $1::bigint, 'file-' || lpad(i::text, 5, '0') || '.bin', $2 || '/file-' || lpad(i::text, 5, '0') || '.bin',
               'file', i, encode(sha256(i::text::bytea), 'hex'), 'files/' || $3 || '-' || i
        from generate_series(1, $4::int) i`,
        [folderId, `/${folder}`, folder, entries],
      );
      const listingUrl = `${url}/${folder}/?limit=${entries}`;
      const body = await (await fetch(listingUrl, { headers })).text();
      await writeFile(join(staticDir, `${folder}.json`), body);
    }
    await client.end();
    const idle = await rssOf(share.pid);
    const html = await htmlRows(`${url}/list${HTML_ENTRIES}/?limit=${HTML_ENTRIES}`, headers.authorization, share.pid, idle);
    baseline = await startStaticServer(staticDir);
    for (const entries of [2000, 10000]) {
      const folder = `list${entries}`;
      const results = await alternate(3, {
        service: () => loadGet(`${url}/${folder}/?limit=${entries}`, { seconds, connections, headers }),
        static: () => loadGet(`${baseline!.url}/${folder}.json`, { seconds, connections }),
      });
      const rps = results.service!.map((r) => r.rps);
      const value = median(rps);
      const goal = goals[entries]!;
      progress(rows, {
        name: `JSON listing, ${entries.toLocaleString('en')} entries, ${connections} clients (rounds ${rps.map((r) => round(r, 0)).join(' / ')})`,
        value: round(value),
        unit: 'req/s',
        baseline: round(median(results.static!.map((r) => r.rps))),
        ratio: round(value / median(results.static!.map((r) => r.rps)), 3),
        goal: `≥ ${goal} req/s`,
        pass: value >= goal,
      });
    }
    rows.push(...html);
  } finally {
    await baseline?.stop();
    await share.stop();
  }
  return rows;
}

/** The HTML listing against the JSON one of the same folder, and the peak RSS of the HTML rounds against `idle`. */
async function htmlRows(listingUrl: string, authorization: string, pid: number, idle: number): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const peaks = { json: 0, html: 0 };
  /** One round at `accept`, and the highest RSS of the service during it. */
  const measured = async (format: 'json' | 'html', accept: string) => {
    let result: Awaited<ReturnType<typeof loadGet>> | undefined;
    const peak = await peakDuring(pid, async () => void (result = await loadGet(listingUrl, { seconds, connections, headers: { authorization, accept } })));
    peaks[format] = Math.max(peaks[format], peak);
    return result!;
  };
  const results = await alternate(3, { json: () => measured('json', 'application/json'), html: () => measured('html', 'text/html') });
  const peak = peaks.html;
  const html = results.html!.map((r) => r.rps);
  const json = median(results.json!.map((r) => r.rps));
  const value = median(html);
  progress(rows, {
    name: `HTML listing, ${HTML_ENTRIES.toLocaleString('en')} entries, ${connections} clients, vs JSON (rounds ${html.map((r) => round(r, 0)).join(' / ')})`,
    value: round(value),
    unit: 'req/s',
    baseline: round(json),
    ratio: round(value / json, 3),
    goal: `≥ ${HTML_RATIO_GOAL.toFixed(2)}×`,
    pass: value / json >= HTML_RATIO_GOAL,
  });
  progress(rows, {
    name: `HTML listing, ${HTML_ENTRIES.toLocaleString('en')} entries: peak RSS during it, vs RSS before any load (the JSON rounds' peak: ${round(peaks.json / MiB)} MiB)`,
    value: round(peak / MiB),
    unit: 'MiB',
    baseline: round(idle / MiB),
    ratio: round(peak / idle, 2),
    goal: `≤ idle + ${HTML_PEAK_GOAL / MiB} MiB`,
    pass: peak - idle <= HTML_PEAK_GOAL,
  });
  return rows;
}
