-- Machine keys: `bfs_<id>_<secret>`. Only the SHA-256 of the secret is kept; the id makes lookup one
-- primary-key probe. A key never holds more than its owner may give it (checked at creation and again on
-- every use), and keys minted by a key go away with it.
create table api_keys (
  id text primary key,
  user_id uuid not null references users (id) on delete cascade,
  name text not null,
  secret_sha256 text not null,
  permissions text[] not null check (permissions <@ array['downloads', 'uploads', 'delete']),
  scope text collate "C" not null default '/',
  expires_at timestamptz,
  created_by_key text references api_keys (id) on delete cascade,
  created_at timestamptz not null default now(),
  last_used_at timestamptz
);
create index api_keys_user_id on api_keys (user_id);
create index api_keys_created_by_key on api_keys (created_by_key);
