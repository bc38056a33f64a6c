-- Search (the publishing API's /search) walks its sort order in an index and stops after the page, instead of
-- reading and sorting every matching box: page 1 of 10,000 boxes read them all (make bench ONLY=scale). The
-- organization/box name order already has its indexes (organizations_name_key, then boxes_name_key); these serve
-- the other sort keys: downloads (the boxes downloaded at least once; the others follow by name) and the box's
-- creation and update times.
create index box_downloads_count on box_downloads (count);
create index boxes_created_at on boxes (created_at);
create index boxes_updated_at on boxes (updated_at);
