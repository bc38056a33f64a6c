-- Event streams opened with an API key re-check it when it is deleted or changed, on every replica: the same
-- channel as the account triggers of the kit (boxyard_accounts:<schema>), kind 'key'.
create function api_keys_notify_change() returns trigger language plpgsql as $$
begin
  perform pg_notify('boxyard_accounts:' || tg_table_schema,
    json_build_object('kind', 'key', 'id', case when tg_op = 'DELETE' then old.id else new.id end)::text);
  return null;
end $$;

create trigger api_keys_notify after update of permissions, scope, expires_at or delete on api_keys
  for each row execute function api_keys_notify_change();
