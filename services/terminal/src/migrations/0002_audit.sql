-- Who did what to which terminal session, from where: start, attach, detach, resize, stop, expiry. Rows are
-- only ever inserted (and deleted after recording.retention_days); the user is copied, so a deleted account's
-- rows keep its name.
create table terminal_audit (
  id bigint generated always as identity primary key,
  at timestamptz not null default now(),
  event text not null check (event in ('start', 'attach', 'detach', 'resize', 'stop', 'expiry')),
  user_id uuid,
  username text,
  session_id uuid not null,
  address text,
  user_agent text,
  -- pid:<n> or pod/<name>: where the session's shell runs.
  resource text,
  -- Event details: the end reason, the new size, ...
  detail jsonb not null default '{}'
);
create index terminal_audit_at on terminal_audit (at);
create index terminal_audit_user on terminal_audit (user_id, id);
create index terminal_audit_session on terminal_audit (session_id, id);
