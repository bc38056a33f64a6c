-- Fixed-window counters shared by every replica of a service.
create table rate_limit_counters (
  key text primary key,
  hits integer not null,
  resets_at timestamptz not null
);
create index rate_limit_counters_resets_at on rate_limit_counters (resets_at);
