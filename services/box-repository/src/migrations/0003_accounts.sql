-- Accounts, part 2: refresh tokens (variant B), organization-scoped client credentials (service accounts,
-- variant B) and invitations.

-- One row per refresh token issued. Tokens of one sign-in form a family; each use marks its row used and issues
-- the next. A used token presented again means it was copied: the whole family ends (its access tokens too,
-- through revoked_sessions). Rows go when the family has expired.
create table refresh_tokens (
  jti text primary key,
  family uuid not null,
  subject text not null,
  stay_logged_in boolean not null,
  -- The access token issued with this refresh token (revoked with the family).
  access_jti text not null,
  access_expires_at timestamptz not null,
  family_expires_at timestamptz not null,
  used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index refresh_tokens_family on refresh_tokens (family);
create index refresh_tokens_family_expires_at on refresh_tokens (family_expires_at);

-- Variant B accounts are made by an admin for one organization and hold client credentials: the secret is only
-- exchanged for short-lived access tokens (POST /api/auth/service-account), never sent with every request.
alter table service_accounts add column kind text not null default 'key' check (kind in ('key', 'client'));
alter table service_accounts add column name text;
-- Variant A accounts made without naming an organization act in the creator's; the authority the creator had
-- when making it is re-checked on every use (global admin, or admin of the organization).

-- Invitations to join an organization; the token is kept only as its sha256 and works once.
create table invitations (
  id bigint generated always as identity primary key,
  token_sha256 text not null unique,
  email text not null,
  organization_id bigint not null references organizations on delete cascade,
  invited_by uuid references users on delete set null,
  expires_at timestamptz not null,
  used_at timestamptz,
  used_by uuid references users on delete set null,
  created_at timestamptz not null default now()
);
create index invitations_organization on invitations (organization_id);
