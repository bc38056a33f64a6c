// `auth`: tokens of an external OpenID provider (`resource_server`: RFC 9068 JWT access tokens, optionally
// DPoP-bound per RFC 9449, or opaque tokens through RFC 7662 introspection) and browser sign-in with that provider
// (`sign_in`: authorization code + PKCE, ending in the service's own session). Both off by default; the operator
// renders `spec.auth.oidc` into exactly these keys.
import { z } from 'zod';

/** Asymmetric JWS algorithms only: a provider's keys are public, so an HMAC token could be forged with them. */
export const ASYMMETRIC_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA', 'Ed25519'] as const;

const audience = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);
const httpsOrLoopback = z
  .url({ protocol: /^https?$/ })
  .refine((u) => u.startsWith('https://') || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(u), {
    message: 'must be an https:// URL (http:// only on loopback)',
  });

export const claimMappingSchema = z
  .strictObject({
    /** The claim that names the user (created on first sight); falls back to `sub`. */
    username: z.string().min(1).default('preferred_username'),
    email: z.string().min(1).default('email'),
    /** An array of group names (a single string is one group). */
    groups: z.string().min(1).default('groups'),
  })
  .prefault({});

export const resourceServerSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** The provider's issuer identifier; discovery (`/.well-known/openid-configuration`) names its JWKS. */
    issuer: httpsOrLoopback.optional(),
    /** The `aud` a token must carry (one of them). */
    audience: audience.optional(),
    algorithms: z.array(z.enum(ASYMMETRIC_ALGORITHMS)).min(1).default(['ES256', 'RS256', 'PS256', 'EdDSA']),
    clock_skew_seconds: z.number().int().min(0).max(300).default(30),
    /** An unknown `kid` refetches the JWKS at most this often (key rotation without a flood of fetches). */
    jwks_refetch_min_seconds: z.number().int().min(1).max(3600).default(30),
    claims: claimMappingSchema,
    /** Members of these groups are admins of the service. */
    admin_groups: z.array(z.string().min(1)).default([]),
    dpop: z
      .strictObject({
        /** Refuse plain bearer tokens: every access token must be DPoP-bound. */
        required: z.boolean().default(false),
        proof_max_age_seconds: z.number().int().min(10).max(3600).default(300),
        algorithms: z.array(z.enum(ASYMMETRIC_ALGORITHMS)).min(1).default(['ES256', 'EdDSA', 'RS256', 'PS256']),
        /** Demand a server-issued nonce in proofs (`use_dpop_nonce` + `DPoP-Nonce`). */
        use_nonce: z.boolean().default(false),
      })
      .prefault({}),
    /** Opaque (non-JWT) tokens are checked at the provider's introspection endpoint when this is set. */
    introspection: z
      .strictObject({
        /** Default: `introspection_endpoint` from discovery. */
        endpoint: httpsOrLoopback.optional(),
        client_id: z.string().min(1),
        client_secret: z.string().min(1),
        /** How the service authenticates at the endpoint: as its client is registered at the provider. */
        auth_method: z.enum(['client_secret_basic', 'client_secret_post']).default('client_secret_basic'),
      })
      .optional(),
  })
  .prefault({})
  .superRefine((value, ctx) => {
    if (!value.enabled) return;
    if (!value.issuer) ctx.addIssue({ code: 'custom', path: ['issuer'], message: 'required when auth.resource_server.enabled is true' });
    if (!value.audience) ctx.addIssue({ code: 'custom', path: ['audience'], message: 'required when auth.resource_server.enabled is true' });
  });

export const signInSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** Default: auth.resource_server.issuer. */
    issuer: httpsOrLoopback.optional(),
    client_id: z.string().min(1).optional(),
    /** Absent for a public client (PKCE alone). */
    client_secret: z.string().min(1).optional(),
    scopes: z.array(z.string().min(1)).default(['openid', 'profile', 'email']),
    /** Where the button on the sign-in page says it goes. */
    display_name: z.string().min(1).max(64).default('Single sign-on'),
  })
  .prefault({})
  .superRefine((value, ctx) => {
    if (value.enabled && !value.client_id) ctx.addIssue({ code: 'custom', path: ['client_id'], message: 'required when auth.sign_in.enabled is true' });
  });

/** The keys of `auth` every service has; a service may add its own (the box repository: `jwt`) with `authSchemaWith`. */
export const authSections = { resource_server: resourceServerSchema, sign_in: signInSchema };

export function authSchemaWith<S extends z.core.$ZodLooseShape>(extra: S) {
  return (
    z
      .strictObject({ ...authSections, ...extra })
      // Every key of `auth` has its own default, so an absent section is valid.
      .prefault({} as never)
      .superRefine((value, ctx) => {
        const { sign_in: signIn, resource_server: resourceServer } = value as unknown as { sign_in: SignInConfig; resource_server: ResourceServerConfig };
        if (signIn.enabled && !signIn.issuer && !resourceServer.issuer) {
          ctx.addIssue({
            code: 'custom',
            path: ['sign_in', 'issuer'],
            message: 'required when auth.sign_in.enabled is true and auth.resource_server.issuer is not set',
          });
        }
      })
  );
}

export const authSchema = authSchemaWith({});

export type ResourceServerConfig = z.output<typeof resourceServerSchema>;
export type SignInConfig = z.output<typeof signInSchema>;
export type AuthConfig = z.output<typeof authSchema>;
