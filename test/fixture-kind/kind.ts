// The fixture's cluster kind: FixtureNotes, whose spec.notes.maxLength is its config key notes.max_length (the CRD
// schema of it, with default, bounds and description, comes from config.ts).
import type { ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { NAME, notesConfigSchema } from './config.ts';

export const clusterKind: ClusterKind = {
  kind: 'FixtureNotes',
  plural: 'fixturenotes',
  singular: 'fixturenotes',
  shortNames: [],
  description: 'A fixture service kind of the tests: notes in PostgreSQL.',
  service: NAME,
  port: 3009,
  databaseSchema: 'fixture_notes',
  storage: false,
  managesPods: false,
  configSchema: notesConfigSchema,
  configFields: ['notes.max_length'],
};
