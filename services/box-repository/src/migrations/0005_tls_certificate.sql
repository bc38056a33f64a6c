-- The certificate uploaded through POST /api/setup/upload-ssl: one row, read by every replica (at start and
-- when it changes), so a certificate uploaded to one replica is served by all and survives restarts.
create table tls_certificate (
  id boolean primary key default true check (id),
  cert_pem text not null,
  key_pem text not null,
  fingerprint_sha256 text not null,
  uploaded_by text not null,
  uploaded_at timestamptz not null default now()
);
