// For tests: a rendered config.yaml loaded the way a pod loads it — the secret files written where the projected
// volume puts them (SECRETS_DIR rewritten to a temporary directory), no environment, the given schema.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadConfig } from '@boxyard/kit';
import type { z } from 'zod';
import { SECRETS_DIR } from './common.ts';

/** Values of the mounted Secrets, by their path under SECRETS_DIR. */
export const podSecretFiles: Record<string, string> = {
  'database/url': 'postgres://u:p@db:5432/boxyard\n',
  'storage/access_key': 'AKIA',
  'storage/secret_key': 'secret',
  'session/secret': 'x'.repeat(64),
  'admin/password': 'Str0ngPassw0rd',
};

export function loadAsPod(configYaml: string, schema: z.ZodType, workDir: string): Record<string, unknown> {
  const pod = mkdtempSync(join(workDir, 'pod-'));
  for (const [path, content] of Object.entries(podSecretFiles)) {
    mkdirSync(dirname(join(pod, path)), { recursive: true });
    writeFileSync(join(pod, path), content);
  }
  writeFileSync(join(pod, 'config.yaml'), configYaml.replaceAll(SECRETS_DIR, pod));
  return loadConfig(schema, { file: join(pod, 'config.yaml'), env: {} }) as Record<string, unknown>;
}
