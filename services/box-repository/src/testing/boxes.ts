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
