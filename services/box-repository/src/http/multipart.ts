// Iterates a multipart request's parts, turning what the parser throws for a body it cannot read (no boundary
// in the Content-Type, a malformed part header) into 400 instead of 500: it is the caller's mistake.
import { badRequest } from '@boxyard/kit';
import type { FastifyRequest } from 'fastify';

export async function* multipartParts(
  request: FastifyRequest,
): AsyncGenerator<Awaited<ReturnType<FastifyRequest['parts']> extends AsyncIterable<infer P> ? P : never>> {
  try {
    yield* request.parts();
  } catch (error) {
    // The plugin's own errors carry their status (413 limits, 406...); the parser's plain Errors do not.
    if (typeof (error as { statusCode?: unknown }).statusCode === 'number') throw error;
    throw badRequest(`The multipart body could not be read: ${(error as Error).message}`);
  }
}
