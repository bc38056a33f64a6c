// A shared folder as one .zip, streamed: the subtree is read from PostgreSQL in pages by path, and each file's bytes
// are opened from the object store only when the archive reaches it (yazl's addReadStreamLazy), stored without
// compression (shared files are mostly compressed already, and the CPU stays free), with ZIP64 where sizes or
// offsets need it. Nothing is assembled in memory or on disk; the response's backpressure paces the reads.
import { HttpError, type ObjectStore } from '@boxyard/kit';
import type { FastifyReply } from 'fastify';
import type { Readable } from 'node:stream';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import yazl from 'yazl';
import { descendantsOf, entryColumns, entryRow, type Entry } from '../tree/entry-rows.ts';

/** Entries one archive may hold (the archive's directory is kept until its end): larger trees go with wget --mirror. */
export const MAX_ZIP_ENTRIES = 100_000;
const PAGE = 1000;

async function* subtree(pool: DatabasePool, folder: Entry): AsyncGenerator<Entry> {
  let after = '';
  for (;;) {
    const rows = await pool.any(sql.type(entryRow)`
      select ${entryColumns} from entries where ${descendantsOf(folder.path)} and path > ${after} order by path limit ${PAGE}`);
    yield* rows;
    if (rows.length < PAGE) return;
    after = rows.at(-1)!.path;
  }
}

/** `filename` and RFC 6266 `filename*` for any name. */
export function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export async function sendZip(reply: FastifyReply, deps: { pool: DatabasePool; store: ObjectStore }, folder: Entry, rootName: string): Promise<FastifyReply> {
  const count = await deps.pool.oneFirst(
    sql.type(z.object({ count: z.number() }))`select count(*)::int as count from entries where ${descendantsOf(folder.path)}`,
  );
  if (count > MAX_ZIP_ENTRIES)
    throw new HttpError(413, `This folder holds ${count} entries; a zip holds at most ${MAX_ZIP_ENTRIES} (mirror it with wget instead)`);
  const zip = new yazl.ZipFile();
  const output = zip.outputStream as Readable;
  // A file that cannot be read (storage away) ends the response early: the client sees an incomplete archive.
  zip.on('error', (error: Error) => output.destroy(error));
  const prefix = folder.path === '/' ? '/' : `${folder.path}/`;
  // Entries are added while the archive is being written; yazl writes them one after another in this order.
  void (async () => {
    zip.addEmptyDirectory(rootName, { mtime: new Date(folder.mtime) });
    for await (const entry of subtree(deps.pool, folder)) {
      const name = `${rootName}/${entry.path.slice(prefix.length)}`;
      const mtime = new Date(entry.mtime);
      if (entry.kind === 'dir') {
        zip.addEmptyDirectory(name, { mtime });
        continue;
      }
      const key = entry.storage_key!;
      zip.addReadStreamLazy(name, { mtime, size: entry.size, compress: false }, (callback) => {
        deps.store.get(key).then(
          (stream) => callback(null, stream),
          (error: unknown) => callback(error as Error, undefined as never),
        );
      });
    }
    zip.end();
  })().catch((error: unknown) => output.destroy(error as Error));
  return reply
    .type('application/zip')
    .headers({ 'content-disposition': attachment(`${rootName}.zip`), 'cache-control': 'private, no-store', 'x-content-type-options': 'nosniff' })
    .send(output);
}
