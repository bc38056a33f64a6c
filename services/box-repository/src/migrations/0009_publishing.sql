-- Publishing with the stock tools (`vagrant cloud`, Packer): RubyGems-style version strings, the checksum a
-- provider was declared with before its bytes arrive, and the upload URLs handed out for it.

-- Gem::Version ordering as a sort key compared byte by byte (collate "C"); versions/rubygems-version.ts states
-- the rules and is the reference the tests compare this with. Per canonical segment: a string `1<letters><space>`
-- (the space ends it below any letter), a zero `2`, a positive number `3<2-digit length><digits>`; the end is 40
-- more `2`s, i.e. zeros for every segment a 64-character version can still have: a string sorts before a number
-- and before the end, and a shorter release before a longer one only when the longer goes on with a number.
create function rubygems_version_key(version text) returns text language plpgsql immutable strict parallel safe as $$
declare
  segments text[] := array(select m[1] from regexp_matches(replace(version, '-', '.pre.'), '([0-9]+|[A-Za-z]+)', 'g') as m);
  total int := coalesce(array_length(segments, 1), 0);
  first_string int := total + 1;
  release_end int;
  pre_end int;
  segment text;
  key text := '';
begin
  for i in 1..total loop
    if segments[i] !~ '^[0-9]' then first_string := i; exit; end if;
  end loop;
  release_end := first_string - 1;
  while release_end >= 1 and ltrim(segments[release_end], '0') = '' loop release_end := release_end - 1; end loop;
  pre_end := total;
  while pre_end >= first_string and segments[pre_end] ~ '^[0-9]' and ltrim(segments[pre_end], '0') = '' loop pre_end := pre_end - 1; end loop;
  for i in 1..total loop
    continue when (i > release_end and i < first_string) or i > pre_end;
    segment := segments[i];
    if segment !~ '^[0-9]' then
      key := key || '1' || segment || ' ';
    elsif ltrim(segment, '0') = '' then
      key := key || '2';
    else
      segment := ltrim(segment, '0');
      key := key || '3' || lpad(length(segment)::text, 2, '0') || segment;
    end if;
  end loop;
  return key || repeat('2', 40);
end $$;

drop index versions_order;
alter table versions drop column major, drop column minor, drop column patch;
alter table versions add column version_key text collate "C" generated always as (rubygems_version_key(version_number)) stored;
-- Two strings RubyGems reads as one version (1.0 and 1.0.0) would be one version to Vagrant: refused as a duplicate.
create unique index versions_order on versions (box_id, version_key desc);

-- The checksum a provider was declared with (`vagrant cloud publish --checksum`, the API's provider body) before
-- any bytes arrive: the upload is verified against it.
alter table architectures add column declared_checksum_type text, add column declared_checksum text;

-- Upload URLs handed out by the publishing API (cloud-api/upload-grants.ts): each is a capability for one
-- architecture's file, found by the sha256 of its secret, usable until expires_at (to start an upload) and once:
-- used_at is set in the transaction that commits the file (or when a callback finds the bytes wrong).
-- storage_key: where a direct upload's presigned PUT writes (registered in storage_cleanup until committed).
create table upload_grants (
  token_sha256 text primary key,
  architecture_id bigint not null references architectures on delete cascade,
  direct boolean not null,
  storage_key text,
  expires_at timestamptz not null,
  callback_until timestamptz not null,
  used_at timestamptz,
  outcome text,
  created_at timestamptz not null default now()
);
create index upload_grants_architecture_id on upload_grants (architecture_id);
create index upload_grants_callback_until on upload_grants (callback_until);
