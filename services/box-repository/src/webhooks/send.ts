// One delivery attempt: POST the body to the webhook's URL and report what happened. undici's `request`
// follows no redirects (a 3xx is an answer, recorded as a failure: a redirect could lead anywhere, including
// past the address check), and its Agent connects through the guarded DNS lookup. Each attempt is a CLIENT span
// named as the HTTP conventions name client spans, with `traceparent` sent along.
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { Agent, request } from 'undici';
import { guardedLookup, isPublicAddress, literalAddress, TargetAddressRefused } from './target-address.ts';

export type FailureReason = 'status' | 'redirect' | 'refused_address' | 'timeout' | 'connection';

export interface AttemptResult {
  ok: boolean;
  statusCode?: number;
  reason?: FailureReason;
  /** What went wrong, for the delivery log (never the receiver's body beyond a short excerpt). */
  error?: string;
}

export interface Sender {
  /** `signal` interrupts the attempt (the service is stopping). */
  send(target: {
    url: string;
    body: string;
    headers: Record<string, string>;
    attributes: Record<string, string | number>;
    signal?: AbortSignal;
  }): Promise<AttemptResult>;
  close(): Promise<void>;
}

const EXCERPT_BYTES = 200;
const tracer = trace.getTracer('@boxyard/box-repository/webhooks');

export function createSender(options: { allowPrivate: boolean; timeoutSeconds: number; userAgent: string }): Sender {
  const timeout = options.timeoutSeconds * 1000;
  const agent = new Agent({
    connect: { lookup: guardedLookup(options.allowPrivate), timeout },
    headersTimeout: timeout,
    bodyTimeout: timeout,
    // A receiver's keep-alive is not worth holding sockets for: deliveries are rare and go to many hosts.
    keepAliveTimeout: 1000,
  });

  async function attempt(url: URL, body: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<AttemptResult> {
    const literal = literalAddress(url);
    if (literal && !options.allowPrivate && !isPublicAddress(literal)) throw new TargetAddressRefused(url.hostname, literal);
    const response = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': options.userAgent, ...headers },
      body,
      dispatcher: agent,
      signal: signal ? AbortSignal.any([AbortSignal.timeout(timeout), signal]) : AbortSignal.timeout(timeout),
    });
    const statusCode = response.statusCode;
    // Dropping the body aborts it: undici reports that as an error, which is expected here.
    response.body.on('error', () => {});
    // The status decides; a body that never ends must not turn a 2xx into a timeout.
    if (statusCode >= 200 && statusCode < 300) {
      response.body.destroy();
      return { ok: true, statusCode };
    }
    let excerpt = '';
    try {
      for await (const chunk of response.body) {
        excerpt += (chunk as Buffer).toString('utf8');
        if (excerpt.length >= EXCERPT_BYTES) break; // the rest is not needed: dropping the body closes the connection
      }
    } catch {
      // the excerpt is only for the log
    }
    response.body.destroy();
    if (statusCode >= 300 && statusCode < 400) {
      return {
        ok: false,
        statusCode,
        reason: 'redirect',
        error: `answered ${statusCode} (redirects are not followed)${response.headers.location ? ` to ${String(response.headers.location)}` : ''}`,
      };
    }
    return {
      ok: false,
      statusCode,
      reason: 'status',
      error: `answered ${statusCode}${excerpt ? `: ${excerpt.slice(0, EXCERPT_BYTES).replace(/\s+/g, ' ')}` : ''}`,
    };
  }

  return {
    send({ url, body, headers, attributes, signal }) {
      const target = new URL(url);
      const spanAttributes = {
        'http.request.method': 'POST',
        'url.full': `${target.origin}${target.pathname}`,
        'server.address': target.hostname,
        'server.port': Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
        ...attributes,
      };
      return tracer.startActiveSpan('POST', { kind: SpanKind.CLIENT, attributes: spanAttributes }, async (span) => {
        const sent = { ...headers };
        propagation.inject(context.active(), sent);
        let result: AttemptResult;
        try {
          result = await attempt(target, body, sent, signal);
        } catch (error) {
          result = signal?.aborted
            ? { ok: false, reason: 'connection', error: 'interrupted: the service stopped during the attempt' }
            : describeFailure(error, options.timeoutSeconds);
        }
        if (result.statusCode !== undefined) span.setAttribute('http.response.status_code', result.statusCode);
        if (!result.ok) {
          span.setAttribute('error.type', result.statusCode !== undefined ? String(result.statusCode) : (result.reason ?? 'error'));
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? '' });
        }
        span.end();
        return result;
      });
    },
    close: () => agent.close(),
  };
}

/** An exception of the attempt as a failure: the refused address, a timeout, or a connection error. */
function describeFailure(error: unknown, timeoutSeconds: number): AttemptResult {
  for (let cause: unknown = error; cause; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof TargetAddressRefused) return { ok: false, reason: 'refused_address', error: cause.message };
    if (cause === (cause as { cause?: unknown }).cause) break;
  }
  const e = error as { name?: string; code?: string; message?: string };
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return { ok: false, reason: 'timeout', error: `no answer within ${timeoutSeconds} s` };
  }
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const code = e.code ?? cause?.code;
  return { ok: false, reason: 'connection', error: `${code ? `${code}: ` : ''}${e.message ?? String(error)}` };
}
