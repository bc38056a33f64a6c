// The sandbox ("pause") image every pod starts with. No registry can be reached, so it is made here: a static
// binary that sleeps until signalled, in a one-layer docker-archive that `ctr images import` reads. Cached by the
// hash of its source.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const SOURCE = `#include <signal.h>
#include <unistd.h>
static void stop(int signal) { (void)signal; _exit(0); }
int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  for (;;) pause();
}
`;

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export const PAUSE_IMAGE = `boxyard.local/pause:${sha256(SOURCE).slice(0, 12)}`;

/** Path of the pause image's docker-archive, built once per source version under $BOXYARD_CACHE/images. */
export async function pauseImageArchive(): Promise<string> {
  const cache = join(process.env.BOXYARD_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'boxyard'), 'images');
  const archive = join(cache, `pause-${sha256(SOURCE).slice(0, 12)}.tar`);
  if (existsSync(archive)) return archive;
  await mkdir(cache, { recursive: true });
  const work = await mkdtemp(join(tmpdir(), 'pause-image-'));
  try {
    await mkdir(join(work, 'rootfs'));
    await writeFile(join(work, 'pause.c'), SOURCE);
    await run('gcc', ['-static', '-Os', '-s', '-o', join(work, 'rootfs', 'pause'), join(work, 'pause.c')]);
    const tarFlags = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner'];
    await run('tar', [...tarFlags, '-cf', join(work, 'layer.tar'), '-C', join(work, 'rootfs'), 'pause']);
    const diffId = `sha256:${sha256(readFileSync(join(work, 'layer.tar')))}`;
    const config = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Entrypoint: ['/pause'], User: '65535:65535' },
      rootfs: { type: 'layers', diff_ids: [diffId] },
    });
    const configName = `${sha256(config)}.json`;
    await writeFile(join(work, configName), config);
    await writeFile(join(work, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [PAUSE_IMAGE], Layers: ['layer.tar'] }]));
    await run('tar', [...tarFlags, '-cf', `${archive}.tmp`, '-C', work, 'manifest.json', configName, 'layer.tar']);
    await rename(`${archive}.tmp`, archive);
    return archive;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
