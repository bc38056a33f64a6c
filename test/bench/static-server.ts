// The baseline "plain static file server" of the bench: serves the files of one directory (stat, then the file
// streamed with the stream defaults, a weak validator from size and mtime), nothing else. Runs in its own
// process like the service it is compared with; prints `listening <url>`.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join, normalize } from 'node:path';

const root = process.argv[2];
if (!root) throw new Error('usage: static-server.ts <directory>');
const server = createServer((request, response) => {
  const path = normalize(decodeURIComponent((request.url ?? '/').split('?')[0]!));
  if (path.includes('..')) return void response.writeHead(400).end();
  const file = join(root, path);
  stat(file).then(
    (info) => {
      if (!info.isFile()) return void response.writeHead(404).end();
      response.writeHead(200, {
        'content-type': file.endsWith('.json') ? 'application/json' : 'application/octet-stream',
        'content-length': info.size,
        etag: `W/"${info.size.toString(16)}-${info.mtimeMs.toString(16)}"`,
      });
      createReadStream(file).pipe(response);
    },
    () => void response.writeHead(404).end(),
  );
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object') console.log(`listening http://127.0.0.1:${address.port}`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
