// Invitations: a moderator or admin of an organization (or a global admin) invites an e-mail address; the
// invitee signs up with the token and joins the organization as a user. The token is 256 random bits, kept as its
// sha256 only, works once, and expires after `invitations.expires_in`. With `mail.smtp` configured the link is
// mailed; it is always returned to the inviter too (to pass on by hand).
import { createHash, randomBytes } from 'node:crypto';
import { conflict, forbidden, unprocessable } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { findPath } from '../access/hierarchy.ts';
import { requireOrganizationAdmin } from '../access/permissions.ts';
import type { ServiceContext } from '../context.ts';
import { ownBaseUrl } from '../http/base-url.ts';
import { body, email, errors } from '../http/schemas.ts';
import { int8 } from '../records.ts';
import { requirePrincipal } from './principal.ts';

const TOKEN_PREFIX = 'bxy_inv_';
const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

const invitationSchema = {
  type: 'object',
  properties: {
    message: { type: 'string' },
    email: { type: 'string' },
    organization: { type: 'string' },
    organization_id: { type: 'integer' },
    invitation_token: { type: 'string', description: 'Shown once; the invitee signs up with it (invitationToken).' },
    invitation_token_expires: { type: 'integer', description: 'When the token stops working, in epoch milliseconds.' },
    invitation_link: { type: 'string', format: 'uri', description: 'The sign-up page with the token and the organization name as query parameters.' },
    mail_sent: { type: 'boolean', description: 'Whether the link was mailed (mail.smtp configured and the SMTP server accepted it).' },
  },
  required: ['message', 'email', 'organization', 'organization_id', 'invitation_token', 'invitation_token_expires', 'invitation_link', 'mail_sent'],
  additionalProperties: false,
} as const;

export async function invitationRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  app.post<{ Body: { email: string; organization_name: string } }>(
    '/api/auth/invite',
    {
      schema: {
        tags: ['auth'],
        summary: 'Invite an e-mail address to an organization (its moderators and admins, global admins); the link is mailed when mail.smtp is configured',
        body: body({ email, organization_name: { type: 'string', minLength: 1, maxLength: 100 } }, ['email', 'organization_name']),
        response: { 201: invitationSchema, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (request, reply) => {
      const principal = await requirePrincipal(ctx, request);
      const found = await findPath(ctx, request, { org: request.body.organization_name });
      if (principal.kind !== 'user') throw forbidden('Service accounts cannot invite people');
      if (found.role !== 'moderator') requireOrganizationAdmin(found, found.org.name);
      const base = ownBaseUrl(ctx);
      if (!base) {
        throw conflict(
          `Invitations need server.public_url: this service listens on every address (${ctx.config.server.host || 'all'}), so it has no address of its own to put in the link, and the request's Host header is the client's choice`,
        );
      }
      const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const expiresAt = await ctx.pool.oneFirst(sql.type(z.object({ expires_at: z.number() }))`
      insert into invitations (token_sha256, email, organization_id, invited_by, expires_at)
      values (${tokenHash(token)}, ${request.body.email}, ${found.org.id}, ${principal.id}::uuid, now() + make_interval(secs => ${ctx.config.invitations.expires_in}))
      returning (extract(epoch from expires_at) * 1000)::float8 as expires_at`);
      const link = new URL('/console/sign-up', `${base}/`);
      link.searchParams.set('invitationToken', token);
      link.searchParams.set('organization', found.org.name);
      const mailSent = await mailInvitation(ctx, request, {
        to: request.body.email,
        organization: found.org.name,
        inviter: principal.username,
        link: link.href,
        expiresAt: new Date(expiresAt),
      });
      return reply.status(201).send({
        message: mailSent ? `Invitation mailed to ${request.body.email}` : `Invitation created; send the link to ${request.body.email}`,
        email: request.body.email,
        organization: found.org.name,
        organization_id: found.org.id,
        invitation_token: token,
        invitation_token_expires: Math.round(expiresAt),
        invitation_link: link.href,
        mail_sent: mailSent,
      });
    },
  );
}

async function mailInvitation(
  ctx: ServiceContext,
  request: FastifyRequest,
  invite: { to: string; organization: string; inviter: string; link: string; expiresAt: Date },
): Promise<boolean> {
  if (!ctx.mailer) return false;
  try {
    await ctx.mailer.send({
      to: invite.to,
      subject: `You are invited to ${invite.organization} on Boxyard`,
      text: `${invite.inviter} invited you to join the organization ${invite.organization}.\n\nSign up here (the link works once, until ${invite.expiresAt.toISOString()}):\n\n${invite.link}\n`,
    });
    return true;
  } catch (error) {
    // The invitation stands; the inviter gets the link and passes it on.
    request.log.warn({ err: error }, 'invitation mail not sent');
    return false;
  }
}

const invitationRow = z.object({ id: int8, email: z.string(), organization_id: int8, organization: z.string(), used: z.boolean(), expired: z.boolean() });

/**
 * Inside the sign-up transaction: the invitation behind `token`, locked, refused (422) unless it is unused,
 * unexpired and for this e-mail address. Returns what to do once the user exists.
 */
export async function claimInvitation(tx: CommonQueryMethods, token: string, address: string) {
  const refuse = (rule: string, detail: string): never => {
    throw unprocessable('The invitation cannot be used', [{ pointer: '/invitation_token', rule, params: {}, detail }]);
  };
  const row = await tx.maybeOne(sql.type(invitationRow)`
    select i.id, i.email, i.organization_id, o.name as organization, i.used_at is not null as used, i.expires_at <= now() as expired
    from invitations i join organizations o on o.id = i.organization_id
    where i.token_sha256 = ${tokenHash(token)} for update of i`);
  if (!row) return refuse('invalid', 'no such invitation');
  if (row.used) return refuse('used', 'this invitation has been used already');
  if (row.expired) return refuse('expired', 'this invitation has expired; ask for a new one');
  if (row.email.toLowerCase() !== address.toLowerCase()) return refuse('email_mismatch', 'this invitation is for another e-mail address');
  return {
    organization: row.organization,
    async accept(userId: string) {
      await tx.query(
        sql.unsafe`insert into memberships (organization_id, user_id, role) values (${row.organization_id}, ${userId}::uuid, 'user') on conflict do nothing`,
      );
      await tx.query(sql.unsafe`update invitations set used_at = now(), used_by = ${userId}::uuid where id = ${row.id}`);
    },
  };
}
