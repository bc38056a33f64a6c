// Recordings over REST: GET /api/terminal/recordings (own; admins: all), /recordings/search?q=word (the moments
// a word was shown), /recordings/{id} and /recordings/{id}/cast (asciicast v2, assembled from the stored chunks,
// optionally from a time on). Someone else's recording answers 404 like one that does not exist (admins see all).
import { Readable } from 'node:stream';
import { badRequest, HttpError, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Auth } from '../auth/plugin.ts';
import { envelope, errors, ok } from '../http/envelope.ts';
import { CAST_MEDIA_TYPE, firstTimeOf, headerLine, SEARCH_TERM } from './cast.ts';
import type { RecordingService } from './service.ts';
import type { RecordingRow } from './store.ts';

const LIST_MAX = 100;
const SEARCH_MAX = 50;
const SEARCH_DEFAULT = 20;

const iso = (ms: number) => new Date(ms).toISOString();
const castPath = (id: string) => `/api/terminal/recordings/${id}/cast`;

export function presentRecording(row: RecordingRow) {
  return {
    id: row.id,
    session_id: row.id,
    owner: { id: row.owner_id, username: row.owner_username },
    started_at: iso(row.started_at),
    duration: row.duration,
    bytes: row.bytes,
    // `interrupted`: no gateway writes it any more, yet its session had not ended when the last one stopped.
    state: row.state === 'recording' && !row.live ? 'interrupted' : row.state,
    input: row.input,
    expires_at: iso(row.expires_at),
    cast_path: castPath(row.id),
  };
}

const recordingSchema = {
  type: 'object',
  additionalProperties: true,
  properties: { id: { type: 'string' }, state: { type: 'string' }, duration: { type: 'number' } },
};
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', format: 'uuid' } } };
/** `<started_at ms>.<id>` of the last row of a page. */
// A recording id is a UUID: anything else would reach PostgreSQL as a malformed uuid (a 500, found by the fuzzer).
const cursorPattern = '^[0-9]{1,15}\\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\\.[0-9]{1,9})?$';

type Caller = { id: string; role: string };
const ownerFilter = (caller: Caller) => (caller.role === 'admin' ? undefined : caller.id);

export function recordingRoutes(app: FastifyInstance, deps: { auth: Auth; recordings: RecordingService }): void {
  const { auth, recordings } = deps;
  const { store, objects } = recordings;
  const tags = ['recordings'];

  const visible = async (request: FastifyRequest<{ Params: { id: string } }>) => {
    const row = await store.get(request.params.id);
    const caller = request.user!;
    if (!row || (row.owner_id !== caller.id && caller.role !== 'admin')) throw notFound('Recording does not exist');
    return row;
  };

  app.get<{ Querystring: { limit?: number; before?: string } }>(
    '/api/terminal/recordings',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: "Recorded sessions, newest first: the caller's (admins: everyone's)",
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: LIST_MAX, default: 50 }, before: { type: 'string', pattern: cursorPattern } },
        },
        response: {
          200: envelope({ type: 'object', properties: { recordings: { type: 'array', items: recordingSchema }, next_before: { type: ['string', 'null'] } } }),
          ...errors(400, 401, 429),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50;
      const [startedAt, id] = request.query.before?.split('.') ?? [];
      const rows = await store.list({ ownerId: ownerFilter(request.user!), limit, before: startedAt && id ? { startedAt: Number(startedAt), id } : undefined });
      const last = rows.at(-1);
      return ok(`${rows.length} recording${rows.length === 1 ? '' : 's'}`, {
        recordings: rows.map(presentRecording),
        next_before: rows.length === limit && last ? `${last.started_at}.${last.id}` : null,
      });
    },
  );

  app.get<{ Querystring: { q: string; limit?: number; after?: string } }>(
    '/api/terminal/recordings/search',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: 'Moments in recordings where a word was shown (own; admins: all), newest recording first, paged',
        description:
          'One word (2-64 letters, digits, `_`, `.` or `-`), matched as a whole word or a word prefix, case-insensitive. Each hit names the recording and the second at which the word showed.',
        querystring: {
          type: 'object',
          required: ['q'],
          additionalProperties: false,
          properties: {
            q: { type: 'string', maxLength: 64 },
            limit: { type: 'integer', minimum: 1, maximum: SEARCH_MAX, default: SEARCH_DEFAULT },
            after: { type: 'string', pattern: cursorPattern },
          },
        },
        response: {
          200: envelope({
            type: 'object',
            properties: { hits: { type: 'array', items: { type: 'object', additionalProperties: true } }, next_after: { type: ['string', 'null'] } },
          }),
          ...errors(400, 401, 429),
        },
      },
    },
    async (request) => {
      const term = request.query.q.trim().toLowerCase();
      // One bounded word: no empty, one-letter or wildcard query that would match (and scan) everything.
      if (!SEARCH_TERM.test(term)) throw badRequest('q must be one word of 2 to 64 letters, digits, "_", "." or "-"');
      const limit = request.query.limit ?? SEARCH_DEFAULT;
      const [startedAt, id, seq] = request.query.after?.split('.') ?? [];
      const after = startedAt && id ? { startedAt: Number(startedAt), id, seq: Number(seq ?? 0) } : undefined;
      const rows = await store.search({ term, ownerId: ownerFilter(request.user!), limit, after });
      const hits = await Promise.all(
        rows.map(async (row) => {
          // The chunk's first event is near; its events say exactly when the word showed.
          const text = await objects
            .get(row.storage_key)
            .then(readText)
            .catch(() => '');
          const at = firstTimeOf(text, term) ?? row.first_at;
          return {
            recording_id: row.recording_id,
            owner: { id: row.owner_id, username: row.owner_username },
            started_at: iso(row.started_at),
            at,
            replay_path: `/#replay=${row.recording_id}&t=${at}`,
          };
        }),
      );
      const last = rows.at(-1);
      return ok(`${hits.length} hit${hits.length === 1 ? '' : 's'}`, {
        hits,
        next_after: rows.length === limit && last ? `${last.started_at}.${last.recording_id}.${last.seq}` : null,
      });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/terminal/recordings/:id',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: 'One recording (owner, or an admin)',
        params: idParams,
        response: { 200: envelope({ type: 'object', properties: { recording: recordingSchema } }), ...errors(400, 401, 404, 429) },
      },
    },
    async (request) => ok('Recording', { recording: presentRecording(await visible(request)) }),
  );

  app.get<{ Params: { id: string }; Querystring: { from?: number } }>(
    '/api/terminal/recordings/:id/cast',
    {
      preHandler: auth.requireUser,
      schema: {
        tags,
        summary: 'The recording as an asciicast v2 file (owner, or an admin); with `from`, only its events from that second on',
        params: idParams,
        querystring: { type: 'object', additionalProperties: false, properties: { from: { type: 'number', minimum: 0, maximum: 1e9 } } },
        response: { 200: { description: 'asciicast v2', content: { [CAST_MEDIA_TYPE]: { schema: { type: 'string' } } } }, ...errors(400, 401, 404, 416, 429) },
      },
    },
    async (request, reply) => {
      const row = await visible(request);
      const from = request.query.from;
      if (from !== undefined && from > row.duration) throw new HttpError(416, `from (${from} s) is past the end of the recording (${row.duration} s)`);
      const chunks = (await store.chunks(row.id)).filter((chunk) => from === undefined || chunk.last_at >= from);
      const header = headerLine({
        width: row.cols,
        height: row.rows,
        timestamp: Math.floor(row.started_at / 1000),
        title: `${row.owner_username} ${iso(row.started_at)}`,
        shell: row.shell,
      });
      async function* cast() {
        yield header;
        for (const chunk of chunks) {
          const text = await readText(await objects.get(chunk.storage_key));
          yield from === undefined || chunk.first_at >= from
            ? text
            : text
                .split('\n')
                .filter((line) => line && timeOf(line) >= from)
                .map((line) => `${line}\n`)
                .join('');
        }
      }
      return reply
        .type(CAST_MEDIA_TYPE)
        .header('cache-control', 'no-store')
        .header('content-disposition', `attachment; filename="${row.id}.cast"`)
        .send(Readable.from(cast()));
    },
  );
}

function timeOf(line: string): number {
  try {
    const event = JSON.parse(line) as unknown;
    return Array.isArray(event) && typeof event[0] === 'number' ? event[0] : 0;
  } catch {
    return 0;
  }
}

async function readText(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.isBuffer(part) ? part : Buffer.from(part));
  return Buffer.concat(parts).toString('utf8');
}
