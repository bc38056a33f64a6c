// Sends an object's bytes from storage as the reply body. A body that writes itself (the local store's FileBody,
// the s3 store's UpstreamBody) goes straight to the response through its reused buffers: the reply is hijacked
// after its status and headers are final, so no Fastify stream handling runs per chunk. onResponse hooks still run
// (they follow the response's 'finish'): logs, metrics, and @fastify/otel's, which ends the request span that
// onSend would have. Anything else (a transform, a generated body) is sent the usual way.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingHttpHeaders } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { endHijackedSpan } from '../telemetry/hijacked-span.ts';

/** Writes its bytes to `out` (not ending it); rejects when `out` closes first. FileBody and UpstreamBody are. */
interface SelfWritingBody extends Readable {
  writeTo(out: Writable): Promise<void>;
}
const writesItself = (body: Readable): body is SelfWritingBody => typeof (body as Partial<SelfWritingBody>).writeTo === 'function';

export function sendStoredBody(request: FastifyRequest, reply: FastifyReply, body: Readable): FastifyReply {
  if (!writesItself(body)) return reply.send(body);
  const response = reply.raw;
  reply.hijack();
  response.writeHead(reply.statusCode, reply.getHeaders() as OutgoingHttpHeaders); // numbers are sent as text
  // A response that never finishes (the client went away) runs no onResponse hook: end its span here.
  response.once('close', () => {
    if (!response.writableFinished) endHijackedSpan(request, reply.statusCode);
  });
  body.writeTo(response).then(
    () => response.end(),
    (error: unknown) => {
      // A client that went away is routine; a failing disk or storage mid-body is not (the client sees a short body).
      if (!response.destroyed) request.log.error({ err: error }, 'download failed after its headers were sent');
      else request.log.info({ err: error }, 'download ended early: the client went away');
      response.destroy();
    },
  );
  return reply;
}
