// The Dockerfile installs packages from the manifests before it copies the sources (so a source change does not
// reinstall them): it must COPY every workspace's package.json, or `npm ci` in the image misses a workspace the
// registry's services need. A new service fails here until its line is there.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { services } from '@boxyard/registry';

const root = fileURLToPath(new URL('../../', import.meta.url));

it('the Dockerfile copies the manifest of every workspace, and every registered service is a workspace', async () => {
  const { workspaces } = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as { workspaces: string[] };
  const dockerfile = await readFile(`${root}Dockerfile`, 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY (\S+)\/package\.json \1\/$/gm)].map((m) => m[1]);
  expect(copied.sort()).toEqual([...workspaces].sort());
  const serviceFolders = workspaces.filter((w) => w.startsWith('services/')).map((w) => w.slice('services/'.length));
  for (const service of services) expect(serviceFolders, service.name).toContain(service.name);
});
