// What the resumable-upload tests (and the bench) share, written once: a file of random bytes, a real tus client in
// its own process (tus-js-client or Debian's python3-tuspy: the scripts in resumable/testing/, which print `url`,
// `progress`/`offset` and `done` lines), and one curl request with its answer parsed, the tus creation included.
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const MiB = 1024 * 1024;

export const TUS = { 'Tus-Resumable': '1.0.0' };
export const PATCH = { ...TUS, 'Content-Type': 'application/offset+octet-stream' };
export const b64 = (text: string) => Buffer.from(text).toString('base64');

/** The client scripts: `<endpoint> <file> <authorization> <share path or filename> <chunk bytes> [upload URL]`. */
export const TUS_JS_CLIENT = fileURLToPath(new URL('../resumable/testing/tus-js-upload.ts', import.meta.url));
export const TUSPY_CLIENT = fileURLToPath(new URL('../resumable/testing/tuspy-upload.py', import.meta.url));

/** A file of random bytes, written in 8 MiB pieces (never whole in memory); returns its sha256. */
export async function randomFile(path: string, bytes: number): Promise<string> {
  const hash = createHash('sha256');
  const file = await open(path, 'w');
  try {
    for (let written = 0; written < bytes; written += 8 * MiB) {
      const piece = randomBytes(Math.min(8 * MiB, bytes - written));
      hash.update(piece);
      await file.write(piece);
    }
  } finally {
    await file.close();
  }
  return hash.digest('hex');
}

export interface ClientRun {
  /** The upload's URL once the client printed it ('' if it ended first). */
  url: Promise<string>;
  /** The exit code; null when killed. */
  exit: Promise<number | null>;
  /** What it printed, but its progress lines (a 1 GiB upload prints thousands). */
  lines: string[];
  kill(): void;
}

export interface TusClientArgs {
  endpoint: string;
  file: string;
  /** An Authorization header's value; '' sends none (a file request's link). */
  authorization: string;
  /** The share path (`/a/b.bin`), or a bare file name sent as `filename` (a file request). */
  path: string;
  chunkBytes: number;
  /** Resume this upload instead of creating one. */
  uploadUrl?: string;
}

/**
 * Starts tus-js-client (`js`, in Node) or python3-tuspy (`py`) uploading `args.file`; `killAtBytes`: killed with
 * SIGKILL once it reports having sent that many bytes.
 */
export function startTusClient(client: 'js' | 'py', args: TusClientArgs, killAtBytes?: number): ClientRun {
  const [command, script] = client === 'js' ? [process.execPath, TUS_JS_CLIENT] : ['/usr/bin/python3', TUSPY_CLIENT];
  const argv = [script, args.endpoint, args.file, args.authorization, args.path, String(args.chunkBytes), ...(args.uploadUrl ? [args.uploadUrl] : [])];
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  let resolveUrl!: (url: string) => void;
  const lines: string[] = [];
  const run: ClientRun = {
    url: new Promise((resolve) => (resolveUrl = resolve)),
    exit: new Promise((resolve) =>
      child.once('exit', (code) => {
        resolveUrl('');
        resolve(code);
      }),
    ),
    lines,
    kill: () => child.kill('SIGKILL'),
  };
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [name, value] = line.split(' ');
    if (name === 'url') resolveUrl(value!);
    if (name === 'progress' || name === 'offset') {
      if (killAtBytes !== undefined && Number(value) >= killAtBytes) run.kill();
      return;
    }
    lines.push(line);
  });
  return run;
}

export interface CurlAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface CurlOptions {
  /** The body, sent from a file (--data-binary @file). */
  data?: Buffer;
  /** `user:password` for HTTP Basic. */
  user?: string;
  /** curl's --limit-rate (a slow upload). */
  rate?: string;
  /** More request headers (an API key's Authorization, ...). */
  headers?: Record<string, string>;
}

/** One curl request and its answer (the final one, after any 100 Continue); a cut connection answers what came. */
export async function curlRequest(method: string, url: string, headers: Record<string, string>, options: CurlOptions = {}): Promise<CurlAnswer> {
  const args = ['-sS', '-i', '-X', method];
  if (options.user) args.push('-u', options.user);
  if (options.rate) args.push('--limit-rate', options.rate);
  for (const [name, value] of Object.entries({ ...headers, ...options.headers })) args.push('-H', `${name}: ${value}`);
  const file = options.data ? join(tmpdir(), `curl-body-${randomBytes(6).toString('hex')}`) : undefined;
  if (file) {
    await writeFile(file, options.data!);
    args.push('--data-binary', `@${file}`);
  }
  if (method === 'HEAD') args.splice(args.indexOf('-X'), 2, '-I');
  try {
    const { stdout } = await exec('curl', [...args, url], { maxBuffer: 64 * MiB }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    return parseAnswer(stdout);
  } finally {
    if (file) await rm(file, { force: true });
  }
}

function parseAnswer(stdout: string): CurlAnswer {
  const blocks = stdout.split('\r\n\r\n');
  while (/^HTTP\/1\.1 1\d\d/.test(blocks[0] ?? '')) blocks.shift(); // 100 Continue
  const [head = '', ...rest] = blocks;
  const lines = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(lines[0]!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

/** A tus creation request (POST to the endpoint) for `length` bytes with `metadata` as Upload-Metadata. */
export function tusCreate(endpoint: string, length: number, metadata: string, options: CurlOptions = {}): Promise<CurlAnswer> {
  return curlRequest('POST', endpoint, { ...TUS, 'Upload-Length': String(length), 'Upload-Metadata': metadata }, options);
}
