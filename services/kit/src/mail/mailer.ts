// Sending mail over SMTP with nodemailer (the maintained standard for Node: STARTTLS, implicit TLS, AUTH, proper
// MIME encoding; zero dependencies). Used for invitations and the setup's test mail; any service may use it.
import nodemailer from 'nodemailer';
import { z } from 'zod';

/** `mail.smtp` of a service's configuration (also the body of a test-mail request). */
export const smtpSchema = z.strictObject({
  host: z.string().min(1).max(253),
  port: z.number().int().min(1).max(65535).default(587),
  /** true: TLS from the first byte (port 465); false: plain, upgraded with STARTTLS when the server offers it. */
  secure: z.boolean().default(false),
  /** Refuse to send unless the connection is upgraded to TLS (for servers on other machines). */
  require_tls: z.boolean().default(false),
  auth: z.strictObject({ user: z.string().min(1), pass: z.string().min(1) }).optional(),
  /** The sender, `address@host` or `Name <address@host>`. */
  from: z.string().min(3).max(320),
  timeout_seconds: z.number().int().min(1).max(120).default(15),
});
export type SmtpSettings = z.output<typeof smtpSchema>;

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

/** The SMTP server could not be reached or refused the mail; `message` says which step failed and why. */
export class MailDeliveryError extends Error {
  override name = 'MailDeliveryError';
}

export interface Mailer {
  send(mail: OutgoingMail): Promise<{ messageId: string }>;
}

export function createMailer(settings: SmtpSettings): Mailer {
  const timeout = settings.timeout_seconds * 1000;
  return {
    async send(mail) {
      // A transport per message: mail is rare here (invitations, tests), and no idle connection is kept open.
      const transport = nodemailer.createTransport({
        host: settings.host,
        port: settings.port,
        secure: settings.secure,
        requireTLS: settings.require_tls,
        ...(settings.auth ? { auth: { user: settings.auth.user, pass: settings.auth.pass } } : {}),
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
      });
      try {
        const info = await transport.sendMail({ from: settings.from, to: mail.to, subject: mail.subject, text: mail.text });
        return { messageId: info.messageId };
      } catch (error) {
        const failure = error as { message?: string; code?: string; response?: string; command?: string };
        const detail = failure.response ?? failure.message ?? String(error);
        throw new MailDeliveryError(
          `SMTP ${settings.host}:${settings.port}${failure.command ? ` (${failure.command})` : ''}: ${failure.code ? `${failure.code} ` : ''}${detail}`,
        );
      } finally {
        transport.close();
      }
    },
  };
}
