// GET /auth/oidc/callback: where the provider sends the browser back. Checks the response against the sign-in
// this browser started, exchanges the code, finds or creates the user and starts the service's own session.
import * as client from 'openid-client';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DeletedIdentityError, type ProviderIdentity } from './identities.ts';
import { continuePage, noStore, sendPage } from './pages.ts';
import { configuration, type SignInContext } from './sign-in-context.ts';
import { exchangeFailure, fail, SignInFailure } from './sign-in-failure.ts';
import { CALLBACK_PATH } from './sign-in-paths.ts';
import { TRANSACTION_TTL_SECONDS, transactionCookieOptions, type SignInTransaction } from './transaction.ts';

type CallbackRequest = FastifyRequest<{ Querystring: Record<string, string | undefined> }>;
type Tokens = client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;

const stringClaim = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : undefined);
const groupsOf = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((g): g is string => typeof g === 'string') : typeof value === 'string' ? [value] : [];

/** ID token claims, completed from userinfo when a mapped claim is missing (some providers keep them there). */
async function claimsOf({ claimNames, mapping }: SignInContext, config: client.Configuration, tokens: Tokens, request: FastifyRequest) {
  const idClaims = tokens.claims();
  if (!idClaims) throw new SignInFailure(401, 'Sign-in refused', 'The provider returned no ID token.');
  // Groups matter only when they make admins: a provider without a groups claim costs no userinfo call then.
  const wanted = [claimNames.username, claimNames.email, ...(mapping.adminGroups.length > 0 ? [claimNames.groups] : [])];
  const missing = wanted.some((name) => !(name in idClaims));
  if (!missing || !config.serverMetadata().userinfo_endpoint) return idClaims;
  try {
    const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    // Signed ID token claims win; userinfo only fills what they lack.
    return { ...info, ...idClaims };
  } catch (error) {
    request.log.warn({ err: error }, 'oidc sign-in: userinfo failed; using the ID token claims alone');
    return idClaims;
  }
}

/** The provider's answer, checked against this browser's sign-in (state, once only, no error). */
async function checkResponse(
  { links }: SignInContext,
  query: CallbackRequest['query'],
  transaction: SignInTransaction | undefined,
): Promise<SignInTransaction> {
  if (!transaction)
    throw new SignInFailure(
      400,
      'No sign-in in progress',
      'This browser has no sign-in waiting for this response: it expired, was already finished, or was started elsewhere. Sign in again.',
    );
  if (query.state !== transaction.state)
    throw new SignInFailure(400, 'Sign-in refused', 'The response does not belong to the sign-in started in this browser (state mismatch).');
  if (query.error) {
    throw new SignInFailure(
      401,
      'Sign-in was not completed',
      `The provider answered ${query.error}${query.error_description ? `: ${query.error_description}` : ''}.`,
    );
  }
  if (!(await links.redeemState(transaction.state, new Date(Date.now() + TRANSACTION_TTL_SECONDS * 1000)))) {
    throw new SignInFailure(400, 'Sign-in refused', 'This sign-in response was already used.');
  }
  return transaction;
}

async function exchangeCode(ctx: SignInContext, config: client.Configuration, request: CallbackRequest, transaction: SignInTransaction): Promise<Tokens> {
  // The URL the provider redirected to, from our public URL (not the Host header): openid-client derives
  // the token request's redirect_uri from it, and checks state and iss on its query.
  const currentUrl = new URL(ctx.callbackUrl);
  for (const [name, value] of Object.entries(request.query)) if (typeof value === 'string') currentUrl.searchParams.set(name, value);
  try {
    return await client.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: transaction.codeVerifier,
      expectedState: transaction.state,
      expectedNonce: transaction.nonce,
      idTokenExpected: true,
    });
  } catch (error) {
    request.log.info({ err: error }, 'oidc sign-in: code exchange failed');
    throw exchangeFailure(error);
  }
}

async function finishSignIn(ctx: SignInContext, request: CallbackRequest, reply: FastifyReply, opened: SignInTransaction | undefined) {
  const { links, claimNames } = ctx;
  const transaction = await checkResponse(ctx, request.query, opened);
  const config = await configuration(ctx);
  const tokens = await exchangeCode(ctx, config, request, transaction);
  const claims = await claimsOf(ctx, config, tokens, request);
  const identity: ProviderIdentity = {
    issuer: claims.iss,
    subject: claims.sub,
    username: stringClaim(claims[claimNames.username]) ?? claims.sub,
    email: stringClaim(claims[claimNames.email]),
    groups: groupsOf(claims[claimNames.groups]),
  };
  const user = await links.signIn(identity, ctx.mapping).catch((error: unknown) => {
    if (error instanceof DeletedIdentityError) throw new SignInFailure(403, 'Sign-in refused', `${error.message}.`);
    throw error;
  });
  if (user.disabled) throw new SignInFailure(403, 'Sign-in refused', 'This account is disabled.');
  const session = await ctx.options.session.start(reply, user);
  if (tokens.id_token) await links.rememberSession(session.jti, tokens.id_token, session.expiresAt);
  request.log.info({ userId: user.id, issuer: identity.issuer }, 'oidc sign-in');
  // After the provider's cross-site redirect, a browser withholds SameSite=Strict cookies along the rest of
  // the redirect chain; a page that moves on by itself makes the next request same-site, cookie included.
  if (request.headers['sec-fetch-site'] === 'cross-site') return sendPage(reply, 200, continuePage(transaction.returnTo, 'Signed in'));
  return noStore(reply).redirect(transaction.returnTo, 303);
}

export function callbackRoute(app: FastifyInstance, ctx: SignInContext, tags: string[]): void {
  app.get<{ Querystring: Record<string, string | undefined> }>(
    CALLBACK_PATH,
    {
      schema: {
        tags,
        summary: 'Where the provider sends the browser back: finishes the sign-in and sets the session cookie',
        querystring: {
          type: 'object',
          properties: {
            code: { type: 'string' },
            state: { type: 'string' },
            iss: { type: 'string' },
            error: { type: 'string' },
            error_description: { type: 'string' },
          },
        },
      },
    },
    async (request, reply) => {
      const transaction = await ctx.sealer.open(request.cookies[ctx.cookieName]);
      // Single use: whatever happens next, this browser's transaction is over.
      reply.clearCookie(ctx.cookieName, { ...transactionCookieOptions(0), maxAge: undefined });
      try {
        return await finishSignIn(ctx, request, reply, transaction);
      } catch (error) {
        if (error instanceof SignInFailure) return fail(request, reply, error, transaction?.returnTo ?? '/');
        throw error;
      }
    },
  );
}
