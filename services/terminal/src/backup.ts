// What `boxyard backup` keeps of the terminal service: its accounts. Sessions are live processes (or pods)
// that a restore cannot bring back, so their records are left out.
import { accountsBackup, backupDescriptor, oidcSignInBackup, rateLimitBackup, resourceServerBackup } from '@boxyard/kit/backup.ts';
import { sessionMigrations } from './sessions/store.ts';

export const terminalBackup = backupDescriptor('terminal', [
  accountsBackup,
  oidcSignInBackup,
  resourceServerBackup,
  rateLimitBackup,
  { migrations: sessionMigrations, tables: { terminal_sessions: { backup: false, reason: 'live terminal sessions: their shells do not survive a restore' } } },
]);
