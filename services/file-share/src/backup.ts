// What `boxyard backup` keeps of the file share. An upload streams into a fresh opaque key (`files/<uuid>`,
// files/upload.ts) and the entry that names it commits only after the bytes are stored; replacing a file points
// the entry at a new key and queues the old one as garbage. So a consistent snapshot of `entries` only names
// complete objects.
import { accountsBackup, backupDescriptor, oidcSignInBackup, rateLimitBackup, resourceServerBackup } from '@boxyard/kit/backup.ts';
import { fileURLToPath } from 'node:url';
import { SERVICE_NAME } from './config.ts';

export const fileShareMigrations = { namespace: 'file-share', dir: fileURLToPath(new URL('./migrations', import.meta.url)) };

/** In the order the migrations apply (the host runs them at start; restore runs exactly these). */
export const fileShareBackup = backupDescriptor(SERVICE_NAME, [
  accountsBackup,
  oidcSignInBackup,
  resourceServerBackup,
  rateLimitBackup,
  {
    migrations: fileShareMigrations,
    tables: {
      entries: { backup: true, objectKeys: ['storage_key'] },
      api_keys: { backup: true },
      // Kept with their ids, so the id sequence continues and Last-Event-ID keeps its meaning.
      events: { backup: true },
      event_retention: { backup: true },
      // Links name entries by id and users by id: both are in this backup, so a restored link works as before.
      share_links: { backup: true },
      share_arrivals: { backup: true },
      object_garbage: { backup: false, reason: 'objects to delete (replaced files, uploads in progress); none of them is referenced' },
      resumable_uploads: {
        backup: false,
        reason: 'resumable uploads in progress (hours at most); a restored share has no half-sent files, clients start again',
      },
      resumable_segments: { backup: false, reason: 'the received chunks of resumable uploads in progress, not part of any file yet' },
    },
  },
]);
