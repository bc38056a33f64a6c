// The uploaded certificate in PostgreSQL (one row): replicas read it at start and poll for a newer one.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

const row = z.object({ cert_pem: z.string(), key_pem: z.string(), fingerprint_sha256: z.string() });
export type StoredCertificate = z.output<typeof row>;

export async function loadUploadedCertificate(pool: DatabasePool): Promise<StoredCertificate | null> {
  return pool.maybeOne(sql.type(row)`select cert_pem, key_pem, fingerprint_sha256 from tls_certificate`);
}

export async function saveUploadedCertificate(pool: DatabasePool, pair: { cert: string; key: string; fingerprint: string; uploadedBy: string }): Promise<void> {
  await pool.query(sql.unsafe`
    insert into tls_certificate (id, cert_pem, key_pem, fingerprint_sha256, uploaded_by) values (true, ${pair.cert}, ${pair.key}, ${pair.fingerprint}, ${pair.uploadedBy})
    on conflict (id) do update set cert_pem = excluded.cert_pem, key_pem = excluded.key_pem, fingerprint_sha256 = excluded.fingerprint_sha256,
      uploaded_by = excluded.uploaded_by, uploaded_at = now()`);
}
