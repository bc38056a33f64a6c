// A minimal fixture service kind (issue 28): one folder, a route and a table, declared once. `boxyard dev` serves
// it, `boxyard backup` backs it up and the operator reconciles its kind, all from this declaration; it is loaded
// through BOXYARD_EXTRA_SERVICES (services/registry), so nothing outside this folder names it.
import { fileURLToPath } from 'node:url';
import { backupDescriptor, rateLimitBackup } from '@boxyard/kit/backup.ts';
import { defineService } from '@boxyard/kit/service/define-service.ts';
import { devDefaults } from '@boxyard/kit/service/dev-defaults.ts';
import { NAME, notesConfigSchema } from './config.ts';
import { clusterKind } from './kind.ts';

const migrations = { namespace: NAME, dir: fileURLToPath(new URL('./migrations', import.meta.url)) };

export const serviceDefinition = defineService({
  name: NAME,
  version: '0.0.1',
  config: notesConfigSchema,
  metricsPort: 9309,
  errorShape: 'problem',
  openapi: { title: 'Boxyard fixture notes' },
  kind: clusterKind,
  backup: backupDescriptor(NAME, [rateLimitBackup, { migrations, tables: { notes: { backup: true } } }]),
  devDefaults: (context) => devDefaults(context, NAME),
  plugin: async () => (await import('./routes.ts')).notesPlugin,
});
