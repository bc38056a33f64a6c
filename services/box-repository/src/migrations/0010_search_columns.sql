-- Search (the publishing API's /search, v1 and v2) sorts by downloads and lists only boxes with a released file.
-- Both were computed per request over every visible box's versions, providers, architectures and files, a cost that
-- grew with the catalogue (make bench ONLY=scale: 0.5 s at 10,000 boxes). They are kept per box instead.

-- Released: the box has an active version with a file. Kept by the trigger that already follows every change of a
-- box's tree (it bumps metadata_version in the same update, so replicas hear of both at once).
alter table boxes add column released boolean not null default false;
update boxes b set released = exists (
  select 1 from versions v join providers p on p.version_id = v.id join architectures a on a.provider_id = p.id
  join files f on f.architecture_id = a.id where v.box_id = b.id and v.status = 'active');

create or replace function bump_box_metadata_version() returns trigger language plpgsql as $$
declare
  item record;
  target bigint;
begin
  if tg_op = 'DELETE' then item := old; else item := new; end if;
  if tg_table_name = 'versions' then
    target := item.box_id;
  elsif tg_table_name = 'providers' then
    select v.box_id into target from versions v where v.id = item.version_id;
  elsif tg_table_name = 'architectures' then
    select v.box_id into target from providers p join versions v on v.id = p.version_id where p.id = item.provider_id;
  else
    select v.box_id into target from architectures a join providers p on p.id = a.provider_id join versions v on v.id = p.version_id
    where a.id = item.architecture_id;
  end if;
  -- A cascade from a deleted parent finds no box any more; the parent's own trigger has bumped it.
  if target is not null then
    update boxes set metadata_version = metadata_version + 1,
      released = exists (select 1 from versions v join providers p on p.version_id = v.id join architectures a on a.provider_id = p.id
                         join files f on f.architecture_id = a.id where v.box_id = target and v.status = 'active')
    where id = target;
  end if;
  return null;
end $$;
alter function bump_box_metadata_version() set search_path from current;

-- Downloads per box, counted with each file's (files/serve-file.ts) in one statement: a table of its own, not a
-- column of boxes, because every update of a box row is NOTIFYed to the replicas' metadata caches. A box's count
-- keeps the downloads of versions deleted since (as the hosted registry's box downloads do).
create table box_downloads (
  box_id bigint primary key references boxes on delete cascade,
  count bigint not null default 0
);
insert into box_downloads (box_id, count)
  select v.box_id, sum(f.download_count) from files f join architectures a on a.id = f.architecture_id
  join providers p on p.id = a.provider_id join versions v on v.id = p.version_id
  group by v.box_id having sum(f.download_count) > 0;
