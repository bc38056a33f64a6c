-- The share's directory tree. Bytes live in object storage under opaque keys (`files/<uuid>`); names, sizes,
-- times and checksums live here, so listing and search are indexed queries and every replica sees one tree.
--
-- Children point at their parent by id (integrity, cascades) and every row also carries its materialised share
-- path (`/a/b`, `/` for the root), so that a lookup by URL is one equality on a unique index and a subtree is
-- one range scan on the same index (search, recursive delete). Renaming a folder updates its own row and, in the
-- same transaction, the path prefix of its descendants. Both columns use the "C" collation: byte order for
-- sorting, and range scans that never depend on the server's locale.
create table entries (
  id bigint generated always as identity primary key,
  parent_id bigint references entries (id) on delete cascade,
  name text collate "C" not null,
  path text collate "C" not null,
  kind text not null check (kind in ('file', 'dir')),
  size bigint not null default 0 check (size >= 0),
  sha256 text check (sha256 ~ '^[0-9a-f]{64}$'),
  storage_key text unique,
  mtime timestamptz not null default now(),
  created_by uuid references users (id) on delete set null,
  created_at timestamptz not null default now(),
  check ((parent_id is null) = (path = '/')),
  check ((kind = 'file') = (storage_key is not null and sha256 is not null))
);
create unique index entries_path_key on entries (path);
create unique index entries_parent_name_key on entries (parent_id, name);
-- Listings: directories first, then files, each by name in byte order.
create index entries_listing on entries (parent_id, kind, name);
create index entries_sha256 on entries (sha256) where sha256 is not null;

insert into entries (parent_id, name, path, kind) values (null, '', '/', 'dir');

-- Objects to delete from storage: bytes of replaced and deleted files (delete_after = now, removed after the
-- commit) and uploads in progress (delete_after = far ahead; the row goes away when the upload commits). A
-- sweeper retries what a crash left behind, so no record ever points at missing bytes and no orphan lives forever.
create table object_garbage (
  storage_key text primary key,
  delete_after timestamptz not null
);
create index object_garbage_delete_after on object_garbage (delete_after);
