-- Webhooks: subscriptions, one delivery per (event, webhook) made from the events outbox, and every attempt of
-- each delivery (the admins' delivery log). Any replica may deliver: a worker claims due deliveries with
-- FOR UPDATE SKIP LOCKED and leases them (next_attempt_at moves past the request's timeout), so two replicas
-- never send the same delivery at once.

create table webhooks (
  id bigint generated always as identity primary key,
  url text not null,
  events text[] not null,
  -- Needed in clear to sign each delivery (HMAC); never returned by the API after creation.
  secret text not null,
  description text not null default '',
  created_by uuid,
  created_at timestamptz not null default now()
);

create table webhook_deliveries (
  -- Sent as `webhook-id`: the same on every retry, so receivers can drop duplicates.
  id uuid primary key default gen_random_uuid(),
  webhook_id bigint not null references webhooks (id) on delete cascade,
  event_id bigint not null references events (id) on delete cascade,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_status_code integer,
  last_error text,
  created_at timestamptz not null default now(),
  finished_at timestamptz,
  unique (webhook_id, event_id)
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_of_webhook on webhook_deliveries (webhook_id, created_at desc);

create table webhook_delivery_attempts (
  id bigint generated always as identity primary key,
  delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null,
  started_at timestamptz not null,
  duration_ms integer not null,
  status_code integer,
  error text,
  unique (delivery_id, attempt)
);
