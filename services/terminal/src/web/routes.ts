// The browser terminal at `/`: our page and script, and xterm.js with its fit and attach add-ons served from
// the installed packages (no CDN). Only the listed files are served, with a strict Content-Security-Policy.
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import staticFiles from '@fastify/static';
import { notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyReply } from 'fastify';

const require = createRequire(import.meta.url);
const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));
const PUBLIC_DIR = fileURLToPath(new URL('./public', import.meta.url));

const assets: Record<string, { dir: string; file: string }> = {
  'app.js': { dir: PUBLIC_DIR, file: 'app.js' },
  'app.css': { dir: PUBLIC_DIR, file: 'app.css' },
  'recordings.js': { dir: PUBLIC_DIR, file: 'recordings.js' },
};
const vendor: Record<string, { dir: string; file: string }> = {
  'xterm.mjs': { dir: packageDir('@xterm/xterm'), file: 'lib/xterm.mjs' },
  'xterm.css': { dir: packageDir('@xterm/xterm'), file: 'css/xterm.css' },
  'addon-fit.mjs': { dir: packageDir('@xterm/addon-fit'), file: 'lib/addon-fit.mjs' },
  'addon-attach.mjs': { dir: packageDir('@xterm/addon-attach'), file: 'lib/addon-attach.mjs' },
};

// xterm.js writes <style> elements for its theme, hence 'unsafe-inline' for styles only.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}

export async function webRoutes(app: FastifyInstance): Promise<void> {
  // Only for reply.sendFile: every served file is routed explicitly below.
  await app.register(staticFiles, { root: PUBLIC_DIR, serve: false });

  app.get('/', { schema: { hide: true }, config: { rateLimit: false } }, async (_request, reply) =>
    secure(reply).header('cache-control', 'no-cache').sendFile('index.html', PUBLIC_DIR),
  );

  app.get<{ Params: { file: string } }>('/assets/:file', { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
    const asset = Object.hasOwn(assets, request.params.file) ? assets[request.params.file] : undefined;
    if (!asset) throw notFound(`No asset ${request.params.file}`);
    return secure(reply).header('cache-control', 'no-cache').sendFile(asset.file, asset.dir);
  });

  app.get<{ Params: { file: string } }>('/vendor/:file', { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
    const asset = Object.hasOwn(vendor, request.params.file) ? vendor[request.params.file] : undefined;
    if (!asset) throw notFound(`No asset ${request.params.file}`);
    return secure(reply).header('cache-control', 'public, max-age=86400').sendFile(asset.file, asset.dir);
  });
}
