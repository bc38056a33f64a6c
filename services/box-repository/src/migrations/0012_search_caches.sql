-- What the search's caches are checked against (cloud-api/search-document-cache.ts, search-positions.ts).

-- 1. Each box's cached result document holds while the box row's version (its xmin) is the same; the
-- metadata_version bump renews it on every change of the box's tree. The document shows more of a file than the
-- Vagrant metadata does (its checksum, checksum type and update time), so a change of any of these bumps too.
drop trigger files_metadata_version on files;
create trigger files_metadata_version
  after insert or delete or update of architecture_id, file_name, storage_key, size, sha256, checksum_type, checksum, updated_at on files
  for each row execute function bump_box_metadata_version();

-- 2. The search generation: moves with every statement that changes what any search lists or its order (boxes, the
-- metadata_version bumps of their trees included; organizations; download counts; memberships). Read in the same
-- snapshot as a page's rows, it tells whether a page position found earlier still holds. Kept in 16 rows, each
-- writing session bumping the one of its backend, so concurrent writers (download counts) do not all wait on one
-- row lock; readers add them up.
create table search_generation (
  shard int primary key,
  value bigint not null default 0
);
insert into search_generation (shard) select generate_series(0, 15);

create function bump_search_generation() returns trigger language plpgsql as $$
begin
  update search_generation set value = value + 1 where shard = pg_backend_pid() % 16;
  return null;
end $$;
alter function bump_search_generation() set search_path from current;

create trigger boxes_search_generation after insert or update or delete or truncate on boxes
  for each statement execute function bump_search_generation();
create trigger organizations_search_generation after insert or update or delete or truncate on organizations
  for each statement execute function bump_search_generation();
create trigger box_downloads_search_generation after insert or update or delete or truncate on box_downloads
  for each statement execute function bump_search_generation();
create trigger memberships_search_generation after insert or update or delete or truncate on memberships
  for each statement execute function bump_search_generation();
