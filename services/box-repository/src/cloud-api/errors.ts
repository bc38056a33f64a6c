// The Vagrant Cloud API's body parsing and error body, `{"errors": [...], "success": false}`: the clients print `errors` (Packer
// joins them; the gem shows the body). The message comes first, then one entry per failing field.
import { HttpError, logFailure, toHttpError } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { NotFoundError } from 'slonik';

export function installCloudErrors(app: FastifyInstance): void {
  // The gem sends `Content-Type: application/json` with an empty body on release, revoke and callbacks.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = (body as string).trim();
    try {
      done(null, text === '' ? {} : JSON.parse(text));
    } catch {
      done(new HttpError(400, 'The body is not valid JSON'), undefined);
    }
  });
  app.setErrorHandler((error, request, reply) => {
    const httpError = error instanceof NotFoundError ? new HttpError(404, 'Not found: it was deleted while this request ran') : toHttpError(error, 'problem');
    logFailure(request, error, httpError);
    for (const [name, value] of Object.entries(httpError.headers)) reply.header(name, value);
    const fields = httpError.errors.map((e) => `${e.pointer.replace(/^\//, '').replaceAll('/', '.') || 'body'} ${e.detail}`);
    return reply
      .status(httpError.statusCode)
      .type('application/json')
      .send({ errors: [httpError.message, ...fields], success: false });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .type('application/json')
      .send({ errors: [`No such API call: ${request.method} ${request.url.split('?')[0]}`], success: false }),
  );
}
