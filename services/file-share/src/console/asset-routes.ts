// GET /-/assets/{file}: the console's stylesheet and module scripts, read once at start from console/public and
// served from memory with an ETag. Only the listed files exist; the share serves no other script.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { notFound } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { ASSETS_PATH } from './layout.ts';
import { PAGE_HEADERS } from './page-security.ts';

const PUBLIC_DIR = new URL('./public/', import.meta.url);
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
export const ASSET_FILES = ['console.css', 'console.js', 'files.js', 'keys.js', 'request.js', 'resumable.js', 'share-dialog.js', 'shares.js'] as const;

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const assets = new Map<string, Asset>();
  for (const name of ASSET_FILES) {
    const body = await readFile(new URL(name, PUBLIC_DIR));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    assets.set(name, { body, type: TYPES[name.slice(name.lastIndexOf('.'))]!, etag });
  }

  app.get<{ Params: { file: string } }>(`${ASSETS_PATH}/:file`, { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
    const asset = assets.get(request.params.file);
    if (!asset) throw notFound(`No asset ${request.params.file}`);
    // Revalidated on each use (cheap, 304): a new release's scripts are never mixed with an old page.
    reply.headers({ ...PAGE_HEADERS, etag: asset.etag, 'cache-control': 'no-cache' }).type(asset.type);
    if (request.headers['if-none-match'] === asset.etag) return reply.status(304).send();
    return reply.send(asset.body);
  });
}
