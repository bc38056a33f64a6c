-- Resumable (tus) uploads through a file request (shares/request-tus.ts). Such an upload takes one use of its link
-- when it is created, as a plain upload through the link does before its bytes are read; the link is named here so
-- that the use is given back in the same transaction that ends the upload without a file (terminated, expired).
-- A link deleted meanwhile leaves the upload to expire on its own (its owner, `link:<id>`, can no longer reach it).
alter table resumable_uploads add column share_link_id uuid references share_links (id) on delete set null;
create index resumable_uploads_share_link on resumable_uploads (share_link_id) where share_link_id is not null;
