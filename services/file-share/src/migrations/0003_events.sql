-- Live events, kept for replay (Last-Event-ID) and fanned out to every replica with LISTEN/NOTIFY. Rows are
-- written under the tree's write lock, so ids commit in increasing order and a client that saw id N has seen
-- everything below N.
create table events (
  id bigint generated always as identity primary key,
  name text not null,
  -- The share paths the event is about (old and new path of a rename): the permission filter reads these.
  paths text[] collate "C" not null,
  data jsonb not null,
  created_at timestamptz not null default now()
);
create index events_created_at on events (created_at);

-- The highest id removed by retention: a client resuming from below it has missed events and must re-list.
create table event_retention (
  singleton boolean primary key default true check (singleton),
  purged_through bigint not null default 0
);
insert into event_retention default values;
