-- Share links (read a file or a folder) and file requests (upload-only into one folder). The token is the link's
-- URL (128 random bits, base64url): kept as is so its owner can copy the link again, as SFTPGo and filebrowser
-- do; `id` names the link in the API and in events, where the token must never appear. A link follows its entry
-- through renames (entry_id) and goes with it when the entry is deleted. It never holds more than its creator:
-- the creator's account (and the key it was made with) is read again on every use; deleting them deletes it.
create table share_links (
  id uuid primary key default gen_random_uuid(),
  token text not null unique,
  kind text not null check (kind in ('share', 'request')),
  entry_id bigint not null references entries (id) on delete cascade,
  created_by uuid not null references users (id) on delete cascade,
  created_by_key text references api_keys (id) on delete cascade,
  password_hash text,
  expires_at timestamptz not null,
  -- share: downloads (a file's bytes or a zip); request: files that arrived. Null = no limit.
  max_uses integer check (max_uses > 0),
  uses integer not null default 0 check (uses >= 0),
  -- request: the largest file accepted.
  max_file_bytes bigint check (max_file_bytes > 0),
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  last_used_at timestamptz
);
create index share_links_created_by on share_links (created_by);
create index share_links_entry_id on share_links (entry_id);
create index share_links_created_by_key on share_links (created_by_key);

-- What arrived through a file request, for its owner (the file itself may since have been moved or deleted).
create table share_arrivals (
  id bigint generated always as identity primary key,
  link_id uuid not null references share_links (id) on delete cascade,
  path text collate "C" not null,
  size bigint not null,
  sha256 text not null,
  address text not null,
  arrived_at timestamptz not null default now()
);
create index share_arrivals_link_id on share_arrivals (link_id, id);
