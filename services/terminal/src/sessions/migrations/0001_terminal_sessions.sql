-- One row per terminal session, live or recently ended. Any gateway replica can serve any session from it.
create table terminal_sessions (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null references users (id) on delete cascade,
  terminal_cookie text not null,
  backend text not null check (backend in ('local', 'kubernetes')),
  state text not null default 'starting'
    check (state in ('starting', 'running', 'stopping', 'exited', 'stopped', 'failed')),
  -- unix:/path (local backend) or host:port (pod IP and agent port); null until the agent is ready.
  agent_address text,
  -- pid:<n> or pod/<name>: what the backend releases when the session ends.
  agent_resource text,
  -- The agent's attach secret, AES-256-GCM sealed (see agent-secret.ts).
  agent_secret text not null,
  exit_code integer,
  end_reason text,
  created_at timestamptz not null default now(),
  last_activity_at timestamptz not null default now(),
  expires_at timestamptz not null,
  ended_at timestamptz,
  -- The reaper's schedule: a replica claims due rows with FOR UPDATE SKIP LOCKED.
  next_check_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- At most one live shell per (user, terminal_cookie), even when two starts race on two replicas.
create unique index terminal_sessions_live_cookie on terminal_sessions (owner_id, terminal_cookie)
  where state in ('starting', 'running');
create index terminal_sessions_owner on terminal_sessions (owner_id, created_at desc);
create index terminal_sessions_due on terminal_sessions (next_check_at)
  where state in ('starting', 'running', 'stopping');
create index terminal_sessions_ended on terminal_sessions (ended_at) where ended_at is not null;
