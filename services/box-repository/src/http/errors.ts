// The seed's problem `type`s where they differ from the kit's defaults: a uniqueness failure (409) and an
// unreadable body (400) belong to the validation family.
import { HttpError, logFailure, renderError, toHttpError } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { NotFoundError, UniqueIntegrityConstraintViolationError } from 'slonik';

export const PROBLEM_BASE = 'https://boxyard.io/problems';

export const alreadyExists = (message: string, pointer: string, value: string) =>
  new HttpError(409, message, { kind: 'validation', errors: [{ pointer, rule: 'unique', params: { value }, detail: `'${value}' is already taken` }] });

/** Runs a write; a unique-constraint violation becomes the 409 described by `conflict`. */
export async function uniquely<T>(write: () => Promise<T>, conflict: () => HttpError): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof UniqueIntegrityConstraintViolationError) throw conflict();
    throw error;
  }
}

export function installProblemTypes(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    // A row found at the start of a request and deleted by another before its write: the write found nothing.
    let httpError = error instanceof NotFoundError ? new HttpError(404, 'Not found: it was deleted while this request ran') : toHttpError(error, 'problem');
    if (httpError.statusCode === 400 && httpError.kind !== 'validation') {
      httpError = new HttpError(400, httpError.message, { kind: 'validation', errors: httpError.errors, headers: httpError.headers });
    }
    logFailure(request, error, httpError);
    const { type, body } = renderError(httpError, { shape: 'problem', problemBase: PROBLEM_BASE }, request.url.split('?')[0]);
    for (const [name, value] of Object.entries(httpError.headers)) reply.header(name, value);
    return reply.status(httpError.statusCode).type(type).send(body);
  });
}
