// Writes the CRDs to crds/ (the single source) and their copies to charts/boxyard/crds/ (helm reads only files
// inside the chart), and the TypeScript types of the specs to generated-types.ts. Run after changing
// definitions.ts, a service's kind.ts or the config keys it names: node operator/src/crds/generate.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderCrds } from './render.ts';
import { renderSpecTypes } from './spec-types.ts';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const crdDirs = [join(repoRoot, 'crds'), join(repoRoot, 'charts', 'boxyard', 'crds')];
export const specTypesFile = fileURLToPath(new URL('./generated-types.ts', import.meta.url));

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const dir of crdDirs) {
    mkdirSync(dir, { recursive: true });
    for (const { file, text } of renderCrds()) writeFileSync(join(dir, file), text);
    console.log(`wrote ${renderCrds().length} CRDs to ${dir}`);
  }
  writeFileSync(specTypesFile, await renderSpecTypes());
  console.log(`wrote ${specTypesFile}`);
}
