// The V8 flags of services/boxyard/node-flags (one a line, `#` comments), as the shell launchers read them with
// `sed '/^#/d'`: for the launcher tests and the benches, which start the product the same way.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const NODE_FLAGS_FILE = fileURLToPath(new URL('../node-flags', import.meta.url));

export function readNodeFlags(file = NODE_FLAGS_FILE): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}
