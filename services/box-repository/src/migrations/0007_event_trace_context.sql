-- The W3C trace context of the request that recorded an event, so its webhook deliveries join that request's
-- trace (one upload: the HTTP span, its SQL and S3 calls, and the deliveries it caused). Null outside a trace.
alter table events add column traceparent text;
