// What the sign-in routes share: the provider, the identity links, the sealed transaction cookie and the URLs
// the provider sends the browser back to, all made once from the plugin's options.
import type * as client from 'openid-client';
import type { AuthConfig } from '../config/auth-section.ts';
import { createIdentityLinks, type IdentityLinks, type RoleMapping } from './identities.ts';
import type { OidcSignInOptions } from './plugin.ts';
import { createProviderClient, ProviderUnavailableError, type ProviderClient } from './provider.ts';
import { SignInFailure } from './sign-in-failure.ts';
import { CALLBACK_PATH } from './sign-in-paths.ts';
import { createTransactionSealer } from './transaction.ts';
import { withoutTrailingSlashes } from '../text/trim.ts';

export interface SignInContext {
  options: OidcSignInOptions;
  provider: ProviderClient;
  links: IdentityLinks;
  sealer: ReturnType<typeof createTransactionSealer>;
  /** The transaction cookie's name: one per service, so services on one host never share it. */
  cookieName: string;
  /** The public URL as configured, without trailing slashes. */
  base: string;
  callbackUrl: string;
  postLogoutUrl: string;
  /** Which claims name the user, their e-mail and groups. */
  claimNames: AuthConfig['resource_server']['claims'];
  mapping: RoleMapping;
}

export function signInContext(options: OidcSignInOptions, issuer: string, clientId: string): SignInContext {
  const { auth } = options;
  const base = withoutTrailingSlashes(options.publicUrl);
  return {
    options,
    provider: createProviderClient({ issuer, clientId, clientSecret: auth.sign_in.client_secret }),
    links: createIdentityLinks(options.pool),
    sealer: createTransactionSealer(options.secret, options.service),
    cookieName: `boxyard_oidc_${options.service.replace(/[^A-Za-z0-9]/g, '_')}`,
    base,
    callbackUrl: `${base}${CALLBACK_PATH}`,
    postLogoutUrl: `${base}/`,
    claimNames: auth.resource_server.claims,
    mapping: { admin: options.roles?.admin ?? 'admin', user: options.roles?.user ?? 'user', adminGroups: auth.resource_server.admin_groups },
  };
}

/** The provider's configuration for a sign-in: a provider that cannot be reached is the person's failure page. */
export async function configuration({ provider }: SignInContext): Promise<client.Configuration> {
  try {
    return await provider.configuration();
  } catch (error) {
    if (error instanceof ProviderUnavailableError)
      throw new SignInFailure(502, 'Sign-in unavailable', 'The identity provider could not be reached; try again later.');
    throw error;
  }
}
