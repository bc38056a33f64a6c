// What `boxyard backup` needs to know about a service's data, declared beside the code that owns it: every table
// its migrations create, either backed up (with the columns that name objects in the service's storage) or left
// out on purpose (with the reason). A table in neither list stops a backup, and fails the classification test,
// until someone decides which it is.
import { accountMigrations } from './accounts/accounts.ts';
import type { MigrationSource } from './db/migrate.ts';
import { resourceServerMigrations } from './oidc/replay-cache.ts';
import { oidcSignInMigrations } from './oidc-sign-in/identities.ts';
import { rateLimitMigrations } from './rate-limit/rate-limit.ts';

export type TableRule =
  /** Rows are backed up and restored; `objectKeys`: columns holding keys of objects in the service's storage. */
  | { backup: true; objectKeys?: readonly string[] }
  /** Rows are neither backed up nor restored: state that only matters while the service runs. */
  | { backup: false; reason: string };

/** One migration source and the tables it creates. */
export interface BackupPart {
  migrations: MigrationSource;
  tables: Record<string, TableRule>;
}

export interface BackupDescriptor {
  service: string;
  /** In the order the service applies them at start. */
  migrations: MigrationSource[];
  tables: Record<string, TableRule>;
}

export function backupDescriptor(service: string, parts: BackupPart[]): BackupDescriptor {
  return {
    service,
    migrations: parts.map((p) => p.migrations),
    tables: Object.assign({}, ...parts.map((p) => p.tables)) as Record<string, TableRule>,
  };
}

/** The kit's accounts: users (with password hashes) and sign-outs, so a revoked token stays revoked. */
export const accountsBackup: BackupPart = {
  migrations: accountMigrations,
  tables: { users: { backup: true }, revoked_sessions: { backup: true } },
};

export const rateLimitBackup: BackupPart = {
  migrations: rateLimitMigrations,
  tables: { rate_limit_counters: { backup: false, reason: 'per-client request counters of the current window' } },
};

/** Provider identities linked to users (kept: without them a restored user would be created again on sign-in). */
export const oidcSignInBackup: BackupPart = {
  migrations: oidcSignInMigrations,
  tables: {
    oidc_identities: { backup: true },
    // Deleted provider users stay deleted after a restore.
    oidc_deleted_identities: { backup: true },
    // Restored sessions keep their sign-out at the provider.
    oidc_sessions: { backup: true },
    oidc_used_states: { backup: false, reason: 'sign-in states redeemed in the last minutes (callback replay protection)' },
  },
};

export const resourceServerBackup: BackupPart = {
  migrations: resourceServerMigrations,
  tables: { dpop_proof_jtis: { backup: false, reason: 'DPoP proof ids seen within the proof window (replay protection)' } },
};
