-- A counter per folder that changes whenever anything its listing shows changes (an entry in it added, removed,
-- renamed or replaced, or the folder's own path): every replica caches a folder's serialized JSON listing under
-- this number (files/listing-cache.ts) and reads it back with the listing's one query, so a change made on any
-- replica, or by hand in SQL, is seen by all of them at once. Triggers rather than the tree's code so that no
-- writer can forget it. Statement-level with transition tables: inserting 10,000 rows bumps their folder once
-- per statement, not 10,000 times.
alter table entries add column listing_version bigint not null default 0;

-- The table is named with its schema (tg_table_schema): a writer's search_path need not include it.
create function entries_bump_listing_version() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    execute format('update %I.entries set listing_version = listing_version + 1 where id in (select parent_id from new_rows)', tg_table_schema);
  elsif tg_op = 'DELETE' then
    -- A cascade from a deleted folder finds its parent gone; the folder's own delete has bumped its parent.
    execute format('update %I.entries set listing_version = listing_version + 1 where id in (select parent_id from old_rows)', tg_table_schema);
  elsif pg_trigger_depth() = 1 then
    -- The folders whose entries changed in what a listing shows, and a renamed folder itself (its listing shows
    -- its path). Not at depth 2: that is this very update of the counter (or a foreign key's set null of
    -- created_by), which no listing shows.
    execute format($update$update %I.entries set listing_version = listing_version + 1 where id in (
      select n.parent_id from old_rows o join new_rows n using (id)
      where (o.parent_id, o.name, o.path, o.kind, o.size, o.sha256, o.mtime) is distinct from (n.parent_id, n.name, n.path, n.kind, n.size, n.sha256, n.mtime)
      union select o.parent_id from old_rows o join new_rows n using (id) where o.parent_id is distinct from n.parent_id
      union select n.id from old_rows o join new_rows n using (id) where n.kind = 'dir' and o.path <> n.path)$update$, tg_table_schema);
  end if;
  return null;
end $$;

create trigger entries_listing_version_insert after insert on entries
  referencing new table as new_rows for each statement execute function entries_bump_listing_version();
create trigger entries_listing_version_delete after delete on entries
  referencing old table as old_rows for each statement execute function entries_bump_listing_version();
create trigger entries_listing_version_update after update on entries
  referencing old table as old_rows new table as new_rows for each statement execute function entries_bump_listing_version();
