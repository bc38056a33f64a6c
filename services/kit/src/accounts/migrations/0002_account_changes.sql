-- A disabled account keeps its data (and its sessions' records) but no credential of it is accepted any more.
alter table users add column disabled_at timestamptz;

-- Long-lived connections (terminal sockets, event streams) were authorised once, when they opened. Every replica
-- LISTENs on 'boxyard_accounts:<schema>' and re-checks what a notification names: a revoked session (sign-out on
-- any replica), or a user whose role, disabled state or existence changed. Triggers, so that every way of making
-- the change (any route, any replica, psql) is seen; NOTIFY is sent on commit only.
create function accounts_notify_change() returns trigger language plpgsql as $$
declare
  channel text := 'boxyard_accounts:' || tg_table_schema;
begin
  if tg_table_name = 'revoked_sessions' then
    perform pg_notify(channel, json_build_object('kind', 'revoked', 'jti', new.jti)::text);
  elsif tg_op = 'DELETE' then
    perform pg_notify(channel, json_build_object('kind', 'user', 'id', old.id)::text);
  else
    perform pg_notify(channel, json_build_object('kind', 'user', 'id', new.id)::text);
  end if;
  return null;
end $$;

create trigger revoked_sessions_notify after insert on revoked_sessions
  for each row execute function accounts_notify_change();
create trigger users_notify after update of role, disabled_at or delete on users
  for each row execute function accounts_notify_change();
