-- Paths may be 4096 bytes (share-path.ts), but a btree index row holds at most 2704: a path between ~2.7 KB and
-- the limit failed its insert with a 500. Uniqueness needs no path index (a path is its parent's path and its
-- name, and (parent_id, name) is unique); a lookup by path uses a hash index (a 4-byte hash per row, any length),
-- and a subtree's range scan uses a btree on the path's first 512 characters (at most 2048 bytes), which
-- tree-store.ts's descendantsOf adds to its range.
drop index entries_path_key;
create index entries_path_hash on entries using hash (path);
create index entries_path_prefix on entries (left(path, 512));
