create table widgets (id bigint generated always as identity primary key, name text not null unique);
-- Two statements in one file: migrations are plain SQL scripts.
insert into widgets (name) values ('first');
