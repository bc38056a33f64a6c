// POST /api/mail/test-smtp: global admins try SMTP settings by sending a real message with them (before putting
// them into mail.smtp). The settings are used for this message only and never stored. A failure is answered with
// one generic message whatever the cause (connection refused, time-out, another protocol, a refused sign-in),
// and no sooner than the time-out after the request began: otherwise its words or its timing would tell open
// ports from closed ones on any host the service can reach. The reason goes to the service's log.
import { setTimeout as sleep } from 'node:timers/promises';
import { createMailer, HttpError, MailDeliveryError, smtpSchema } from '@boxyard/kit';
import type { FastifyInstance } from 'fastify';
import { requireGlobalAdmin } from '../access/permissions.ts';
import { requirePrincipal } from '../auth/principal.ts';
import type { ServiceContext } from '../context.ts';
import { body, email, errors } from '../http/schemas.ts';

const resultSchema = {
  type: 'object',
  properties: { message: { type: 'string' }, message_id: { type: 'string' } },
  required: ['message', 'message_id'],
  additionalProperties: false,
} as const;

const TIMEOUT_SECONDS = 15;
const NOT_DELIVERED =
  'The test mail was not delivered with these settings: the server could not be reached, did not answer as an SMTP server, ' +
  'or refused the sign-in or the message. Which of these is not said here (the service log has the reason).';

export async function mailRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  app.post<{ Body: { host: string; port?: number; secure?: boolean; require_tls?: boolean; auth?: { user: string; pass: string }; to: string; from: string } }>(
    '/api/mail/test-smtp',
    {
      schema: {
        tags: ['setup'],
        summary: 'Send a test mail with these SMTP settings (global admins); 502 when it was not delivered (the reason is in the service log only)',
        body: body(
          {
            host: { type: 'string', minLength: 1, maxLength: 253 },
            port: { type: 'integer', minimum: 1, maximum: 65535, default: 587 },
            secure: { type: 'boolean', default: false, description: 'TLS from the first byte (port 465); otherwise STARTTLS when offered.' },
            require_tls: { type: 'boolean', default: false },
            auth: body({ user: { type: 'string', minLength: 1, maxLength: 320 }, pass: { type: 'string', minLength: 1, maxLength: 1024 } }, ['user', 'pass']),
            to: email,
            from: { type: 'string', minLength: 3, maxLength: 320 },
          },
          ['host', 'to', 'from'],
        ),
        response: { 200: resultSchema, ...errors(401, 403, 422, 502) },
      },
    },
    async (request) => {
      const principal = await requirePrincipal(ctx, request);
      requireGlobalAdmin({ principal, isGlobalAdmin: principal.kind === 'user' && principal.isAdmin });
      const { to, ...settings } = request.body;
      const mailer = createMailer(smtpSchema.parse({ ...settings, timeout_seconds: TIMEOUT_SECONDS }));
      const started = performance.now();
      try {
        const sent = await mailer.send({
          to,
          subject: 'Boxyard: SMTP test',
          text: 'This is a test message from the Boxyard box repository: the SMTP settings work.\n',
        });
        return { message: `Test mail accepted by ${settings.host}:${settings.port ?? 587} for ${to}`, message_id: sent.messageId };
      } catch (error) {
        if (error instanceof MailDeliveryError) {
          request.log.warn({ reason: error.message }, 'SMTP test mail not delivered');
          await sleep(Math.max(0, started + TIMEOUT_SECONDS * 1000 - performance.now()));
          throw new HttpError(502, NOT_DELIVERED);
        }
        throw error;
      }
    },
  );
}
