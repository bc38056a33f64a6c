-- Browser sign-in with an OpenID provider. Needs the accounts tables (kit-accounts) first.

-- A provider identity (issuer, subject) and the local user created for it on first sign-in. Identities are
-- never matched to existing users by username or email: a provider could assert either for anyone.
create table oidc_identities (
  issuer text not null,
  subject text not null,
  user_id uuid not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  last_sign_in_at timestamptz not null default now(),
  primary key (issuer, subject)
);
create index oidc_identities_user_id on oidc_identities (user_id);

-- The provider's ID token behind each session signed in this way (by the session token's jti): the
-- id_token_hint of RP-initiated logout. Rows go when the session is signed out or would have expired.
create table oidc_sessions (
  session_jti text primary key,
  id_token text not null,
  expires_at timestamptz not null
);
create index oidc_sessions_expires_at on oidc_sessions (expires_at);

-- Authorization responses already redeemed (SHA-256 of their state), so a replayed callback is refused on
-- every replica, whatever the provider does with a reused code.
create table oidc_used_states (
  state_hash text primary key,
  expires_at timestamptz not null
);
create index oidc_used_states_expires_at on oidc_used_states (expires_at);
