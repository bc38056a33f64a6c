-- People who sign in with a password. Roles are the service's own words ('admin', 'user', ...).
create table users (
  id uuid primary key default gen_random_uuid(),
  username text not null,
  email text,
  password_hash text not null,
  role text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_username_key on users (lower(username));
create unique index users_email_key on users (lower(email)) where email is not null;

-- Sessions ended before their expiry (sign-out). Rows are kept until the token would have expired anyway.
create table revoked_sessions (
  jti text primary key,
  expires_at timestamptz not null
);
create index revoked_sessions_expires_at on revoked_sessions (expires_at);
