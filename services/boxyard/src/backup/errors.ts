// A failure the user can act on (a target that is not empty, a corrupted backup, a database that refuses the
// password): printed as one line, without a stack trace.
export class BackupError extends Error {
  override name = 'BackupError';
}
