-- Provider identities whose local user was deleted. Without this, the identity's next token or sign-in would
-- simply create the user again, and deleting would undo nothing. A trigger, so that every way of deleting the
-- user (any route of any service, psql; the identity row goes with the user by cascade) is remembered.
create table oidc_deleted_identities (
  issuer text not null,
  subject text not null,
  deleted_at timestamptz not null default now(),
  primary key (issuer, subject)
);

create function oidc_remember_deleted_identity() returns trigger language plpgsql
  set search_path from current as $$
begin
  insert into oidc_deleted_identities (issuer, subject) values (old.issuer, old.subject)
  on conflict (issuer, subject) do update set deleted_at = now();
  return null;
end $$;

create trigger oidc_identities_remember_deleted after delete on oidc_identities
  for each row execute function oidc_remember_deleted_identity();
