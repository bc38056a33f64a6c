import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../net/free-port.ts';
import { createMailer, MailDeliveryError, smtpSchema } from './mailer.ts';
import { startTestSmtpServer, type TestSmtpServer } from './test-smtp-server.ts';

describe('mailer (real SMTP server on loopback)', () => {
  let server: TestSmtpServer;
  beforeAll(async () => {
    server = await startTestSmtpServer({ auth: { user: 'boxyard', pass: 'Smtp-Secret-1' } });
  });
  afterAll(async () => server?.close());

  it('delivers a message with AUTH, and a long link survives the encoding', async () => {
    const link = `https://boxes.example.test/signup?token=${'x'.repeat(120)}&organization=acme`;
    const mailer = createMailer(
      smtpSchema.parse({ host: server.host, port: server.port, auth: { user: 'boxyard', pass: 'Smtp-Secret-1' }, from: 'Boxyard <noreply@example.test>' }),
    );
    const sent = await mailer.send({ to: 'alice@example.test', subject: 'Hello', text: `Join us: ${link}` });
    expect(sent.messageId).toMatch(/@/);
    const mail = await server.waitFor((m) => m.to.includes('alice@example.test'));
    expect(mail.from).toBe('noreply@example.test');
    expect(mail.user).toBe('boxyard');
    expect(mail.raw).toMatch(/^Subject: Hello$/m);
    expect(mail.text).toContain(link);
  });

  it('says why a message was not delivered: wrong password, nothing listening', async () => {
    const wrong = createMailer(
      smtpSchema.parse({ host: server.host, port: server.port, auth: { user: 'boxyard', pass: 'nope' }, from: 'noreply@example.test' }),
    );
    await expect(wrong.send({ to: 'a@example.test', subject: 's', text: 't' })).rejects.toThrow(MailDeliveryError);
    await expect(wrong.send({ to: 'a@example.test', subject: 's', text: 't' })).rejects.toThrow(/EAUTH|Invalid username or password/);
    const closed = createMailer(smtpSchema.parse({ host: '127.0.0.1', port: await freePort(), from: 'noreply@example.test', timeout_seconds: 5 }));
    await expect(closed.send({ to: 'a@example.test', subject: 's', text: 't' })).rejects.toThrow(/ECONNREFUSED|ESOCKET|ECONNECTION/);
  });
});
