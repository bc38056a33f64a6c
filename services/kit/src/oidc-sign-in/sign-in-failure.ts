// A sign-in that cannot go on: a page for the person signing in (a browser), the service's error shape for
// anything else; the details go to the log.
import * as client from 'openid-client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError } from '../http/http-error.ts';
import { errorPage, sendPage, wants } from './pages.ts';
import { LOGIN_PATH } from './sign-in-paths.ts';

export class SignInFailure extends Error {
  override name = 'SignInFailure';
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  constructor(status: number, title: string, detail: string) {
    super(`${title}: ${detail}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
  }
}

/** Why a code exchange failed, in words for the person signing in; the details go to the log. */
export function exchangeFailure(error: unknown): SignInFailure {
  if (error instanceof client.ResponseBodyError) {
    return new SignInFailure(
      400,
      'Sign-in failed',
      `The provider refused the authorization code (${error.error}${error.error_description ? `: ${error.error_description}` : ''}). It may have been used already or expired; sign in again.`,
    );
  }
  if (error instanceof client.AuthorizationResponseError) {
    return new SignInFailure(
      401,
      'Sign-in was not completed',
      `The provider answered ${error.error}${error.error_description ? `: ${error.error_description}` : ''}.`,
    );
  }
  if (error instanceof client.ClientError || error instanceof client.WWWAuthenticateChallengeError) {
    return new SignInFailure(401, 'Sign-in refused', `The provider's response failed verification (${error.message}).`);
  }
  return new SignInFailure(502, 'Sign-in failed', 'The identity provider could not be reached; try again later.');
}

/** Answers a failure; the page offers to sign in again towards `retryTo` when given. */
export function fail(request: FastifyRequest, reply: FastifyReply, failure: SignInFailure, retryTo?: string) {
  request.log.info({ status: failure.status, reason: failure.message }, 'oidc sign-in refused');
  if (wants(request, 'text/html')) {
    const retry = retryTo === undefined ? undefined : `${LOGIN_PATH}?return_to=${encodeURIComponent(retryTo)}`;
    return sendPage(reply, failure.status, errorPage(failure.title, failure.detail, retry));
  }
  throw new HttpError(failure.status, failure.message);
}
