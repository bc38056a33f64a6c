-- DPoP proofs already used (RFC 9449 §11.1), shared by every replica: a proof is accepted once. The key is a hash
-- of the proof key's thumbprint and the jti (fixed size whatever the client sends; one client cannot block
-- another's jti); a row matters until the proof would be refused as too old anyway.
create table dpop_proof_jtis (
  key bytea primary key,
  expires_at timestamptz not null
);
create index dpop_proof_jtis_expires_at on dpop_proof_jtis (expires_at);
