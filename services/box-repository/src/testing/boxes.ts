// Box files for tests: a tar (gzip'd or not) holding metadata.json, a Vagrantfile and optional filler bytes,
// which is all `vagrant box add` needs (no hypervisor involved).
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';

export interface BoxOptions {
  provider?: string;
  gzip?: boolean;
  /** Bytes of incompressible filler in a `box-disk.img` entry. */
  fillerBytes?: number;
  /** metadata.json's content; `null` leaves it out. */
  metadata?: Record<string, unknown> | string | null;
  /** Entries before metadata.json. */
  leading?: { name: string; content: Buffer }[];
}

export async function makeBox(options: BoxOptions = {}): Promise<Buffer> {
  const archive = pack();
  const chunks: Buffer[] = [];
  archive.on('data', (chunk: unknown) => chunks.push(chunk as Buffer));
  const ended = new Promise<void>((resolve, reject) => {
    archive.on('end', () => resolve());
    archive.on('error', reject);
  });
  for (const entry of options.leading ?? []) archive.entry({ name: entry.name }, entry.content);
  const metadata = options.metadata === undefined ? { provider: options.provider ?? 'virtualbox' } : options.metadata;
  if (metadata !== null) archive.entry({ name: 'metadata.json' }, typeof metadata === 'string' ? metadata : JSON.stringify(metadata));
  archive.entry({ name: 'Vagrantfile' }, 'Vagrant.configure("2") do |config|\nend\n');
  if (options.fillerBytes) archive.entry({ name: 'box-disk.img' }, randomBytes(options.fillerBytes));
  archive.finalize();
  await ended;
  const tar = Buffer.concat(chunks);
  return options.gzip === false ? tar : gzipSync(tar, { level: 1 });
}

export const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
export const md5 = (data: Buffer | string) => createHash('md5').update(data).digest('hex');

/** A ustar header for a regular file of `size` bytes (up to 8 GiB − 1), without its content. */
export function tarHeader(name: string, size: number): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) => header.write(value, offset, length, 'ascii');
  const octal = (offset: number, length: number, value: number) => field(offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
  field(0, 100, name);
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, 0);
  field(148, 8, '        ');
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const byte of header) sum += byte;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return header;
}

/**
 * A gzip bomb shaped like a box: a `padding.img` entry of `paddingMiB` MiB of zeros, then a valid metadata.json
 * and Vagrantfile. Each MiB of zeros is its own gzip member of about 1 KiB (gunzip reads concatenated members as
 * one stream), so a GiB of padding costs about 1 MiB to upload and nothing much to make.
 */
export async function makeGzipBomb(paddingMiB: number): Promise<Buffer> {
  const zeros = gzipSync(Buffer.alloc(1024 * 1024), { level: 9 });
  const rest = await makeBox({ gzip: false });
  return Buffer.concat([gzipSync(tarHeader('padding.img', paddingMiB * 1024 * 1024)), ...Array.from({ length: paddingMiB }, () => zeros), gzipSync(rest)]);
}
