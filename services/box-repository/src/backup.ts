// What `boxyard backup` keeps of the box repository. Box files are stored under fresh opaque keys
// (`boxes/<uuid>`, files/upload.ts) before the row that names them commits, and a replaced file gets a new key
// (the old one is queued for deletion), so a consistent snapshot of `files` only names complete objects.
import { accountsBackup, backupDescriptor, oidcSignInBackup, rateLimitBackup, resourceServerBackup } from '@boxyard/kit/backup.ts';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAME } from './config.ts';

export const migrations = { namespace: SERVICE_NAME, dir: fileURLToPath(new URL('./migrations', import.meta.url)) };

/** In the order the migrations apply (the host runs them at start; restore runs exactly these). */
export const boxRepositoryBackup = backupDescriptor(SERVICE_NAME, [
  accountsBackup,
  oidcSignInBackup,
  resourceServerBackup,
  rateLimitBackup,
  {
    migrations,
    tables: {
      organizations: { backup: true },
      memberships: { backup: true },
      service_accounts: { backup: true },
      // Sessions survive a restore (the signing secrets are restored), so their refresh state does too: a used or
      // revoked refresh token stays refused.
      refresh_tokens: { backup: true },
      // Pending invitations keep working; their tokens are kept as sha256 only.
      invitations: { backup: true },
      boxes: { backup: true },
      versions: { backup: true },
      providers: { backup: true },
      architectures: { backup: true },
      files: { backup: true, objectKeys: ['storage_key'] },
      // Downloads per box (what search sorts by), including those of versions deleted since.
      box_downloads: { backup: true },
      // The webhook outbox, delivered or not: restored so that pending deliveries still go out.
      events: { backup: true },
      // Webhooks (their secrets too: a restored installation signs as before), pending deliveries and the log.
      webhooks: { backup: true },
      webhook_deliveries: { backup: true },
      webhook_delivery_attempts: { backup: true },
      // The certificate uploaded through setup (with its key, like the other secrets a backup keeps): a restored
      // installation serves the same certificate.
      tls_certificate: { backup: true },
      upload_grants: {
        backup: false,
        reason: 'upload URLs valid for minutes; a client whose URL a restore dropped asks for a new one (the same publish command run again)',
      },
      search_generation: {
        backup: false,
        reason: 'a count of changes that replicas check the search positions they hold in memory against; a restore starts in an empty database',
      },
      storage_cleanup: { backup: false, reason: 'objects to delete (replaced files, uploads in progress); none of them is referenced' },
    },
  },
]);
