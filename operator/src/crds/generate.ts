// Writes the CRDs to crds/ (the single source) and their copies to charts/boxyard/crds/ (helm reads only files
// inside the chart). Run after changing definitions.ts: node operator/src/crds/generate.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderCrds } from './render.ts';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const crdDirs = [join(repoRoot, 'crds'), join(repoRoot, 'charts', 'boxyard', 'crds')];

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const dir of crdDirs) {
    mkdirSync(dir, { recursive: true });
    for (const { file, text } of renderCrds()) writeFileSync(join(dir, file), text);
    console.log(`wrote ${renderCrds().length} CRDs to ${dir}`);
  }
}
