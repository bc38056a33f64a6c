-- Resumable uploads (tus 1.0, resumable/). An upload in progress is a row here plus its received chunks, each
-- stored as its own object (`uploads/<id>/<offset>-<uuid>`) and listed in resumable_segments in offset order. Nothing of it is
-- visible in the share until the last byte arrives: then the segments are joined into a fresh `files/<uuid>`
-- object and tree-changes.ts commits it like any other upload.
--
-- Any replica may take any request: the offset, the lease of the request writing to the upload (lease_token,
-- leased_until) and the segments live here; a replica that dies mid-PATCH loses its lease within seconds.
create table resumable_uploads (
  id uuid primary key,
  -- Who created it (`user:<uuid>`, `key:<uuid>`, or what another write grant names): only they may continue it.
  owner text not null,
  path text collate "C" not null,
  length bigint not null check (length >= 0),
  received bigint not null default 0 check (received >= 0 and received <= length),
  metadata jsonb not null default '{}',
  state text not null default 'active' check (state in ('active', 'done', 'terminated', 'expired')),
  lease_token uuid,
  leased_until timestamptz,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index resumable_uploads_expiry on resumable_uploads (expires_at) where state = 'active';
create index resumable_uploads_finished on resumable_uploads (finished_at) where state <> 'active';

create table resumable_segments (
  upload_id uuid not null references resumable_uploads (id) on delete cascade,
  "offset" bigint not null check ("offset" >= 0),
  length bigint not null check (length > 0),
  storage_key text not null unique,
  primary key (upload_id, "offset")
);
