// The clients the download tests use: curl (as Vagrant downloads) and one that stops reading and hangs up.
import { execFile } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** GET with curl; the response head as text and the body as bytes. */
export async function curlGet(url: string, extra: string[] = []): Promise<{ head: string; body: Buffer }> {
  const { stdout } = await run('curl', ['-sS', '-D', '-', ...extra, url], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
  const split = stdout.indexOf('\r\n\r\n');
  return { head: stdout.subarray(0, split).toString(), body: stdout.subarray(split + 4) };
}

/** A client that reads a little, then stops reading and hangs up: the server is left blocked on a full socket. */
export function hangUpMidBody(url: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const request = httpRequest(url, (response) => {
      response.once('data', () => {
        response.pause();
        setTimeout(() => {
          request.destroy();
          resolve();
        }, 100);
      });
    });
    request.once('error', reject);
    request.end();
  });
}
