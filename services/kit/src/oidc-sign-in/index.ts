// Browser sign-in with an external OpenID provider (auth.sign_in): see plugin.ts.
export {
  oidcSignIn,
  oidcSignInMethod,
  hostedSignInOptions,
  LOGIN_PATH,
  CALLBACK_PATH,
  LOGOUT_PATH,
  type OidcSignInOptions,
  type ServiceSession,
} from './plugin.ts';
export { oidcSignInMigrations, createIdentityLinks, usernameFrom, roleFor, type ProviderIdentity, type RoleMapping } from './identities.ts';
export { safeReturnPath } from './return-to.ts';
