-- The fixture kind's one table.
create table notes (
  id bigint generated always as identity primary key,
  text text not null,
  created_at timestamptz not null default now()
);
