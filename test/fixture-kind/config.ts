// The fixture service's config: the sections every service has, and one of its own (`notes`), which its cluster
// kind exposes as spec.notes.
import { serviceSections } from '@boxyard/kit';
import { z } from 'zod';

export const NAME = 'fixture-notes';

export const notesConfigSchema = z.strictObject({
  ...serviceSections({ name: NAME, port: 3009, schema: 'fixture_notes' }),
  notes: z
    .strictObject({
      max_length: z.number().int().min(1).max(10_000).default(280).describe('Longest note accepted, in characters (422 above).'),
    })
    .prefault({})
    .describe('Notes.'),
});

export type NotesConfig = z.output<typeof notesConfigSchema>;
