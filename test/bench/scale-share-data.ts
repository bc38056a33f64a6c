// The scale-share bench's big share, written by SQL: through the upload route, 1,100,000 files would take the bench
// hours. Each statement inserts the tree rows an upload's commit writes (tree-changes.ts commitUpload and
// createFolder): a folder row, and per file its row with name, path, size, sha256, storage key and mtime, under the
// product's own triggers (each folder's listing version is bumped as an upload's would). Not written: the event row
// each upload adds (no listing or search reads events) and the bytes: every file row names its own key
// (`files/scale-<n>`, unique as the schema demands) and no object exists under it; nothing here downloads them.
// Then VACUUM ANALYZE, what autovacuum does to a table after such growth (statistics, visibility map).
import type pg from 'pg';

export const SHARE_SQL_NOTE = 'built by SQL equal to the tree rows uploads write, without their events and bytes (test/bench/scale-share-data.ts)';

/** Bytes each file row says it has (the rows only: no object is stored). */
const FILE_BYTES = 10_240;

/** Zero-padded, so names sort as numbers and a substring search finds a known count. */
export const fileName = (n: number) => `file-${String(n).padStart(7, '0')}.bin`;
export const bigName = (n: number) => `big-${String(n).padStart(6, '0')}.dat`;
export const folderName = (n: number) => `d${String(n).padStart(4, '0')}`;
/** The sha256 a file row of the scale share carries: the same expression as the SQL below. */
export const fileSha256Sql = (label: string) => `encode(sha256(convert_to(${label}, 'UTF8')), 'hex')`;

async function folderId(db: pg.Client, path: string): Promise<string> {
  const found = await db.query<{ id: string }>('select id::text from entries where path = $1', [path]);
  if (found.rows[0]) return found.rows[0].id;
  const name = path.slice(path.lastIndexOf('/') + 1);
  const created = await db.query<{ id: string }>(
    `insert into entries (parent_id, name, path, kind) values ((select id from entries where path = '/'), $1, $2, 'dir') returning id::text`,
    [name, path],
  );
  return created.rows[0]!.id;
}

/** Files `from…to` (names by fileName) into `/<folderName(ceil(n / perFolder))>`, creating those folders. */
export async function addFolders(db: pg.Client, options: { from: number; to: number; perFolder: number }): Promise<void> {
  const { from, to, perFolder } = options;
  const firstFolder = Math.ceil(from / perFolder);
  const lastFolder = Math.ceil(to / perFolder);
  await db.query(
    `insert into entries (parent_id, name, path, kind)
     select (select id from entries where path = '/'), 'd' || lpad(g::text, 4, '0'), '/d' || lpad(g::text, 4, '0'), 'dir'
     from generate_series($1::int, $2::int) g
     where not exists (select 1 from entries where path = '/d' || lpad(g::text, 4, '0'))`,
    [firstFolder, lastFolder],
  );
  // 100 folders per statement: each statement is one transaction of at most 100,000 rows.
  for (let folder = firstFolder; folder <= lastFolder; folder += 100) {
    const low = Math.max(from, (folder - 1) * perFolder + 1);
    const high = Math.min(to, (folder + 99) * perFolder);
    await db.query(
      `insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
       select f.id, x.name, f.path || '/' || x.name, 'file', $3::bigint, ${fileSha256Sql('x.name')}, 'files/scale-' || n
       from generate_series($1::int, $2::int) n
       cross join lateral (select 'file-' || lpad(n::text, 7, '0') || '.bin' as name, '/d' || lpad(((n - 1) / $4::int + 1)::text, 4, '0') as folder) x
       join entries f on f.path = x.folder`,
      [low, high, FILE_BYTES, perFolder],
    );
  }
}

/** Files `from…to` (names by bigName) into the folder `path`. */
export async function addToFolder(db: pg.Client, path: string, from: number, to: number, nameOf: 'big' | 'two-k'): Promise<void> {
  const id = await folderId(db, path);
  const prefix = nameOf === 'big' ? 'big-' : 'two-k-';
  await db.query(
    `insert into entries (parent_id, name, path, kind, size, sha256, storage_key)
     select $1::bigint, x.name, $2 || '/' || x.name, 'file', $5::bigint, ${fileSha256Sql('x.name')}, 'files/scale-' || $2 || '-' || n
     from generate_series($3::int, $4::int) n cross join lateral (select $6 || lpad(n::text, 6, '0') || '.dat' as name) x`,
    [id, path, from, to, FILE_BYTES, prefix],
  );
}

export async function settle(db: pg.Client): Promise<void> {
  await db.query('vacuum analyze entries');
}
