-- Search by name substring (tree-store.ts search) read every row of the share: with 1,100,000 entries one search
-- took ~0.5 s. A trigram index (pg_trgm, a contrib extension PostgreSQL ships and marks trusted: a database owner
-- may create it, no superuser needed) answers `lower(name) like '%…%'` from the index. The indexed expression is
-- the query's: lower() under the case-folding collation pickCaseFoldCollation() chooses, picked here the same way.
--
-- The extension is used where it already is (a database shares one copy between schemas), or created in this
-- schema. Where it cannot be created (an older server, a role without CREATE on the database), the share works as
-- before and searches by name scan: the migration says so and goes on rather than refusing to start.
do $$
declare
  trgm_schema name;
  fold name;
begin
  select n.nspname into trgm_schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm';
  if trgm_schema is null then
    begin
      execute format('create extension pg_trgm schema %I', current_schema());
      trgm_schema := current_schema();
    exception when others then
      raise warning 'file share: pg_trgm cannot be created here (%): search by name reads every entry', sqlerrm;
      return;
    end;
  end if;
  select collname into fold from pg_collation where collname in ('pg_c_utf8', 'und-x-icu') order by collname = 'pg_c_utf8' desc limit 1;
  execute format('create index entries_name_trgm on entries using gin (lower(name collate %I) %I.gin_trgm_ops)', coalesce(fold, 'default'), trgm_schema);
end $$;
