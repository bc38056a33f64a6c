// The import graph has no cycle through the `boxyard` command (issue 12): the command imports the services, so no
// service (nor the kit) may import the command's package; what they share (ServiceDefinition) lives in the kit.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url).pathname;
const packages = ['kit', 'box-repository', 'file-share', 'terminal', 'second-service'];
const IMPORT = /^[ \t]*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')).map((e) => join(e.parentPath, e.name));
}

describe('import graph', () => {
  it('no service and not the kit imports the boxyard command', async () => {
    const offenders: string[] = [];
    let files = 0;
    for (const name of packages) {
      for (const file of await sources(join(root, 'services', name, 'src'))) {
        files++;
        for (const match of (await readFile(file, 'utf8')).matchAll(IMPORT)) {
          const target = match[1] ?? match[2]!;
          if (/(^|\/)boxyard\/src\//.test(target) || target === 'boxyard' || target.startsWith('boxyard/'))
            offenders.push(`${relative(root, file)} → ${target}`);
        }
      }
    }
    expect(files).toBeGreaterThan(50);
    expect(offenders).toEqual([]);
  });
});

describe('imports between packages', () => {
  it('name the package (@boxyard/test/harness/…), never a relative path out of their own package', async () => {
    const roots = [
      'services/kit',
      'services/box-repository',
      'services/file-share',
      'services/terminal',
      'services/second-service',
      'services/registry',
      'services/boxyard',
      'operator',
      'test',
    ].map((p) => join(root, p));
    const packageOf = (file: string) => roots.filter((r) => file.startsWith(`${r}/`)).sort((a, b) => b.length - a.length)[0];
    const offenders: string[] = [];
    for (const packageRoot of roots) {
      const entries = await readdir(packageRoot, { withFileTypes: true, recursive: true });
      for (const entry of entries) {
        if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.parentPath.includes('node_modules')) continue;
        const file = join(entry.parentPath, entry.name);
        if (packageOf(file) !== packageRoot) continue;
        for (const match of (await readFile(file, 'utf8')).matchAll(IMPORT)) {
          const target = match[1] ?? match[2]!;
          // Into another package (a folder of no package, such as charts/, is the repository's own tooling).
          const into = target.startsWith('.') ? packageOf(join(entry.parentPath, target)) : undefined;
          if (into !== undefined && into !== packageRoot) offenders.push(`${relative(root, file)} → ${target}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
