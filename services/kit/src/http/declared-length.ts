// The length a request body says it has (Content-Length), for routes that stream the body: refused early when it
// is over a limit, and handed to storage so parts of a known length can be sent as they arrive. Node's parser has
// already refused a malformed header or one beside chunked encoding; a chunked body has none.
import type { IncomingHttpHeaders } from 'node:http';

export function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  const value = Number(headers['content-length'] ?? Number.NaN);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}
