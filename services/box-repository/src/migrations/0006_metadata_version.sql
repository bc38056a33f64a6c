-- A counter per box that changes whenever anything its Vagrant metadata document lists changes (its versions,
-- providers, architectures and files): every replica caches the document per box and checks this one number per
-- request (metadata/metadata-cache.ts), so a change made on any replica is seen by all of them at once.
-- Download counts are no part of the document: updating them does not bump the counter.
-- Any change of a box row (the counter included) or an organization row is also NOTIFYed on
-- `boxyard_metadata:<schema>`, so replicas can answer anonymous reads from memory without asking first.
alter table boxes add column metadata_version bigint not null default 0;

create function bump_box_metadata_version() returns trigger language plpgsql as $$
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
    update boxes set metadata_version = metadata_version + 1 where id = target;
  end if;
  return null;
end $$;

create trigger versions_metadata_version after insert or delete or update on versions
  for each row execute function bump_box_metadata_version();
create trigger providers_metadata_version after insert or delete or update on providers
  for each row execute function bump_box_metadata_version();
create trigger architectures_metadata_version after insert or delete or update on architectures
  for each row execute function bump_box_metadata_version();
create trigger files_metadata_version after insert or delete or update of architecture_id, file_name, storage_key, size, sha256 on files
  for each row execute function bump_box_metadata_version();

create function notify_box_metadata() returns trigger language plpgsql as $$
declare
  id bigint;
begin
  if tg_op = 'DELETE' then id := old.id; else id := new.id; end if;
  perform pg_notify('boxyard_metadata:' || tg_table_schema, (case when tg_table_name = 'organizations' then 'org:' else 'box:' end) || id);
  return null;
end $$;

create trigger boxes_metadata_notify after update or delete on boxes
  for each row execute function notify_box_metadata();
create trigger organizations_metadata_notify after update or delete on organizations
  for each row execute function notify_box_metadata();
