-- Resumable uploads (tus 1.0, resumable/). An upload in progress is a row here plus its received chunks, listed in
-- resumable_segments in offset order. Nothing of it is visible in the share until the last byte arrives; then
-- tree-changes.ts commits its `files/<uuid>` object like any other upload.
-- - local driver: each chunk is an object of its own (`uploads/<id>/<uuid>`, storage_key), joined at the end;
-- - s3 driver: the upload is an S3 multipart upload of storage_key (multipart_id); a chunk becomes a part as it
--   arrives (part, etag), or, below S3's 5 MiB minimum, is staged as an object until the staged run is big enough
--   (or the upload ends) and then folded into one part.
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
  -- s3: the final object and its multipart upload (registered in object_garbage until the upload commits).
  storage_key text,
  multipart_id text,
  -- The replica-local sha256 state that has seen bytes [0, received), if any (running-hash.ts); else the file is
  -- hashed by reading it once at the end.
  hasher uuid,
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
  -- A chunk stored as its own object, or a part of the upload's multipart upload.
  storage_key text unique,
  part int check (part between 1 and 10000),
  etag text,
  check ((storage_key is null) = (part is not null and etag is not null)),
  primary key (upload_id, "offset")
);
