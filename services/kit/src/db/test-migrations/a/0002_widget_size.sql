alter table widgets add column size integer not null default 1;
