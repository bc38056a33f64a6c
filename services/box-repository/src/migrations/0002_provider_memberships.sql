-- Memberships granted by an identity provider's groups (config `group_mapping.organizations`) are marked, so that
-- leaving the group removes them while memberships given by hand stay untouched.
alter table memberships add column from_provider_group text;
