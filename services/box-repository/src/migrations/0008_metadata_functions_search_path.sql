-- The metadata triggers' functions name their tables unqualified: they must find them in this service's schema
-- whatever the search_path of the session whose write fires them (a restore writes schema-qualified rows with
-- its own search_path, and failed with `relation "boxes" does not exist`).
alter function bump_box_metadata_version() set search_path from current;
alter function notify_box_metadata() set search_path from current;
