-- The box hierarchy (organization > box > version > provider > architecture > file), memberships, service
-- accounts, the events outbox and the storage clean-up queue. Users come from the kit's accounts migration.
-- Names are unique case-insensitively in their scope and looked up the same way.

create table organizations (
  id bigint generated always as identity primary key,
  name text not null,
  description text not null default '',
  email text,
  -- A private organization and everything in it is visible to its members only.
  is_public boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index organizations_name_key on organizations (lower(name));

create table memberships (
  organization_id bigint not null references organizations on delete cascade,
  user_id uuid not null references users on delete cascade,
  role text not null check (role in ('admin', 'moderator', 'user')),
  created_at timestamptz not null default now(),
  primary key (organization_id, user_id)
);
create index memberships_user_id on memberships (user_id);

-- Machine keys `bxy_sa_<key_id>_<secret>`: found by key_id (one indexed query), checked against the sha256.
create table service_accounts (
  id bigint generated always as identity primary key,
  key_id text not null unique,
  key_sha256 text not null,
  username text not null unique,
  user_id uuid not null references users on delete cascade,
  organization_id bigint not null references organizations on delete cascade,
  role text not null check (role in ('moderator', 'user')),
  description text not null default '',
  expires_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index service_accounts_user_id on service_accounts (user_id);

create table boxes (
  id bigint generated always as identity primary key,
  organization_id bigint not null references organizations on delete cascade,
  name text not null,
  description text not null default '',
  is_public boolean not null default false,
  published boolean not null default true,
  guest_access boolean not null default false,
  -- The creator: a user, or the owner of the service account that created it (then service_account_id too).
  user_id uuid references users on delete set null,
  service_account_id bigint references service_accounts on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index boxes_name_key on boxes (organization_id, lower(name));

create table versions (
  id bigint generated always as identity primary key,
  box_id bigint not null references boxes on delete cascade,
  version_number text not null,
  major integer not null,
  minor integer not null,
  patch integer not null,
  description text not null default '',
  status text not null default 'active' check (status in ('unreleased', 'active', 'revoked')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (box_id, version_number)
);
create index versions_order on versions (box_id, major desc, minor desc, patch desc);

create table providers (
  id bigint generated always as identity primary key,
  version_id bigint not null references versions on delete cascade,
  name text not null,
  description text not null default '',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index providers_name_key on providers (version_id, lower(name));

create table architectures (
  id bigint generated always as identity primary key,
  provider_id bigint not null references providers on delete cascade,
  name text not null,
  default_box boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index architectures_name_key on architectures (provider_id, lower(name));
create unique index architectures_one_default on architectures (provider_id) where default_box;

-- One box file per architecture. Replacing it updates this row in place (new storage_key, size, checksums) in
-- the transaction that also queues the old object for deletion, so the row never points at missing bytes.
create table files (
  id bigint generated always as identity primary key,
  architecture_id bigint not null unique references architectures on delete cascade,
  file_name text not null,
  storage_key text not null unique,
  size bigint not null,
  sha256 text not null,
  checksum_type text not null,
  checksum text not null,
  download_count bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Objects to delete: old objects after a replace or delete (delete_after = now), and uploads in progress
-- (delete_after in the future; the row goes when the upload commits). A sweeper deletes what is due, so a crash
-- between commit and delete, or mid-upload, leaves no object behind for long.
create table storage_cleanup (
  storage_key text primary key,
  delete_after timestamptz not null
);
create index storage_cleanup_due on storage_cleanup (delete_after);

-- Events outbox: written in the transaction of the change; webhooks deliver them (part 2).
create table events (
  id bigint generated always as identity primary key,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default now(),
  delivered_at timestamptz
);
create index events_undelivered on events (id) where delivered_at is null;
