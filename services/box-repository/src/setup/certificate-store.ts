// The uploaded certificate in PostgreSQL (one row): replicas read it at start and poll for a newer one. The key
// is stored sealed (key-sealing.ts).
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { openKey, sealKey } from './key-sealing.ts';

const row = z.object({ cert_pem: z.string(), key_pem: z.string(), fingerprint_sha256: z.string() });
export type StoredCertificate = z.output<typeof row>;

/** The stored pair with its key opened; a key no secret opens reads as an empty string (unusable). */
export async function loadUploadedCertificate(pool: DatabasePool, secrets: readonly string[]): Promise<StoredCertificate | null> {
  const stored = await pool.maybeOne(sql.type(row)`select cert_pem, key_pem, fingerprint_sha256 from tls_certificate`);
  return stored && { ...stored, key_pem: openKey(stored.key_pem, secrets) ?? '' };
}

export async function saveUploadedCertificate(
  pool: DatabasePool,
  pair: { cert: string; key: string; fingerprint: string; uploadedBy: string },
  secret: string,
): Promise<void> {
  await pool.query(sql.unsafe`
    insert into tls_certificate (id, cert_pem, key_pem, fingerprint_sha256, uploaded_by) values (true, ${pair.cert}, ${sealKey(pair.key, secret)}, ${pair.fingerprint}, ${pair.uploadedBy})
    on conflict (id) do update set cert_pem = excluded.cert_pem, key_pem = excluded.key_pem, fingerprint_sha256 = excluded.fingerprint_sha256,
      uploaded_by = excluded.uploaded_by, uploaded_at = now()`);
}
