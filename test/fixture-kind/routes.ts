// The fixture service's one route: notes, written and listed.
import type { PluginOptions } from '@boxyard/kit/service/contract.ts';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { NotesConfig } from './config.ts';

const note = z.object({ id: z.string(), text: z.string() });

export async function notesPlugin(app: FastifyInstance, { config }: PluginOptions<NotesConfig>): Promise<void> {
  const noteSchema = { type: 'object', properties: { id: { type: 'string' }, text: { type: 'string' } }, required: ['id', 'text'] };
  app.post<{ Body: { text: string } }>(
    '/notes',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['text'],
          properties: { text: { type: 'string', minLength: 1, maxLength: config.notes.max_length } },
        },
        response: { 201: noteSchema },
      },
    },
    async (request, reply) => {
      const row = await app.pool.one(sql.type(note)`insert into notes (text) values (${request.body.text}) returning id::text as id, text`);
      return reply.code(201).send(row);
    },
  );
  app.get('/notes', { schema: { response: { 200: { type: 'array', items: noteSchema } } } }, async () =>
    app.pool.any(sql.type(note)`select id::text as id, text from notes order by id`),
  );
}
