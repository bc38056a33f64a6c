// What `boxyard backup` keeps of the terminal service: its accounts, session recordings (their chunks' objects
// included) and the audit log. Sessions are live processes (or pods) that a restore cannot bring back, so their
// records are left out.
import { fileURLToPath } from 'node:url';
import { accountsBackup, backupDescriptor, oidcSignInBackup, rateLimitBackup, resourceServerBackup } from '@boxyard/kit/backup.ts';
import type { MigrationSource } from '@boxyard/kit';
import { sessionMigrations } from './sessions/store.ts';

/** Recordings and the audit log (src/migrations); applied after the sessions' own. */
export const terminalMigrations: MigrationSource = { namespace: 'terminal-history', dir: fileURLToPath(new URL('./migrations', import.meta.url)) };

/** In the order the migrations apply (the host runs them at start; restore runs exactly these). */
export const terminalBackup = backupDescriptor('terminal', [
  accountsBackup,
  oidcSignInBackup,
  resourceServerBackup,
  rateLimitBackup,
  { migrations: sessionMigrations, tables: { terminal_sessions: { backup: false, reason: 'live terminal sessions: their shells do not survive a restore' } } },
  {
    migrations: terminalMigrations,
    tables: {
      terminal_recordings: { backup: true },
      terminal_recording_chunks: { backup: true, objectKeys: ['storage_key'] },
      terminal_audit: { backup: true },
    },
  },
]);
