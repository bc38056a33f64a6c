// Refusals of a provider token, rendered as RFC 6750 §3 / RFC 9449 §7.1 challenges. The description goes to the
// caller (in WWW-Authenticate and in the body), so it names the failed check and never echoes token content.
import { HttpError } from '../http/http-error.ts';
import { RETRY_AFTER_SECONDS } from '../http/unavailable.ts';

export type TokenErrorCode = 'invalid_request' | 'invalid_token' | 'invalid_dpop_proof' | 'use_dpop_nonce' | 'insufficient_scope';
export type Scheme = 'Bearer' | 'DPoP';

export class TokenError extends Error {
  override name = 'TokenError';
  /** The scheme whose challenge carries the error: the one the request used. */
  readonly scheme: Scheme;
  readonly code: TokenErrorCode;
  readonly description: string;
  constructor(scheme: Scheme, code: TokenErrorCode, description: string) {
    super(description);
    this.scheme = scheme;
    this.code = code;
    this.description = description;
  }
}

/** The identity provider (discovery, JWKS, introspection) did not answer usably: the server's condition, 503. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
}

const statusOf: Record<TokenErrorCode, number> = {
  invalid_request: 400,
  invalid_token: 401,
  invalid_dpop_proof: 401,
  use_dpop_nonce: 401,
  insufficient_scope: 403,
};

/** RFC 6750 §3: error_description is limited to printable ASCII without `"` and `\`. */
const quotable = (text: string) => text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, "'");

export interface ChallengeOptions {
  /** `algs` of the DPoP challenge (RFC 9449 §7.1). */
  dpopAlgorithms: readonly string[];
  /** Only DPoP is offered: no Bearer challenge. */
  dpopRequired: boolean;
}

const dpopChallenge = (options: ChallengeOptions, params = '') => `DPoP ${params}algs="${options.dpopAlgorithms.join(' ')}"`;

/** The challenge for a request without credentials (no error code: RFC 6750 §3.1). */
export const challengeFor = (options: ChallengeOptions): string => (options.dpopRequired ? dpopChallenge(options) : `${dpopChallenge(options)}, Bearer`);

/**
 * The HttpError for a refusal: the error goes on the challenge of the scheme the request used; the other scheme
 * is still offered, so a client that sent Bearer learns that DPoP is accepted.
 */
export function toHttpError(error: TokenError, options: ChallengeOptions, headers: Record<string, string> = {}): HttpError {
  const params = `error="${error.code}", error_description="${quotable(error.description)}"`;
  const challenge =
    error.scheme === 'DPoP'
      ? `${dpopChallenge(options, `${params}, `)}${options.dpopRequired ? '' : ', Bearer'}`
      : `Bearer ${params}, ${dpopChallenge(options)}`;
  return new HttpError(statusOf[error.code], error.description, { headers: { 'WWW-Authenticate': challenge, ...headers } });
}

export const providerUnavailable = () =>
  new HttpError(503, 'The identity provider is unreachable; try again shortly', { headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } });
