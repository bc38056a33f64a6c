// The baseline "plain static server's PUT" of the scale-share bench (small files): PUT /<name> writes the body to
// <directory>/<name> with the durability the product's local storage gives an upload (a temporary file, fsync,
// rename, fsync of the directory: services/kit/src/storage/local-put.ts) and its sha256 computed on the way, then
// answers 201 with the checksum. Nothing else: no auth, no database. Runs in its own process like the service it is
// compared with; prints `listening <url>`.
import { createHash, randomUUID } from 'node:crypto';
import { open, rename } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';

const root = process.argv[2];
if (!root) throw new Error('usage: put-server.ts <directory>');
const directory = await open(root, 'r');

const server = createServer((request, response) => {
  const name = (request.url ?? '/').slice(1).split('?')[0]!;
  if (request.method !== 'PUT' || !/^[\w.-]{1,128}$/.test(name)) return void response.writeHead(400).end();
  const temp = join(root, `.${randomUUID()}`);
  void (async () => {
    const file = await open(temp, 'w');
    const hash = createHash('sha256');
    try {
      for await (const chunk of request as AsyncIterable<Buffer>) {
        hash.update(chunk);
        await file.write(chunk);
      }
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, join(root, name));
    await directory.sync();
    const body = JSON.stringify({ sha256: hash.digest('hex') });
    response.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  })().catch((error: Error) => {
    console.error(`put-server: ${name}: ${error.message}`);
    response.writeHead(500).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') console.log(`listening http://127.0.0.1:${address.port}`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
