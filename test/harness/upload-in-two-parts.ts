// An upload sent by hand over one HTTP/1.1 connection with its Content-Length: the first `split` bytes, then
// whatever the test checks while the rest has not been sent (e.g. that storage already has a multipart upload under
// way), then the rest. Resolves with the raw answer; the request asks the server to close the connection after it.
import { once } from 'node:events';
import { connect } from 'node:net';

export async function uploadInTwoParts(
  url: string,
  headers: Record<string, string>,
  body: Buffer,
  split: number,
  between: () => Promise<void>,
): Promise<string> {
  const target = new URL(url);
  const socket = connect(Number(target.port), target.hostname);
  await once(socket, 'connect');
  const answer = new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('close', () => resolve(text));
  });
  const head = Object.entries({ ...headers, host: target.host, connection: 'close', 'content-length': String(body.length) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST ${target.pathname}${target.search} HTTP/1.1\r\n${head}\r\n`);
  socket.write(body.subarray(0, split));
  try {
    await between();
  } catch (error) {
    socket.destroy();
    throw error;
  }
  socket.write(body.subarray(split));
  return answer;
}
