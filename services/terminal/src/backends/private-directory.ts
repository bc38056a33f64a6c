// A directory only its owner may enter, made so without trusting its path. The agents' socket directory defaults
// to a fixed name in the shared temp directory, and an account's home has a predictable name: whoever can write
// in the parent can put a symlink, a file or a directory of their own there first, and a stat/chmod/chown by path
// would follow the symlink (as root: chmod or chown a directory of the planter's choice). So the directory is
// opened without following a final symlink, and its type, owner and mode are checked and fixed through that
// descriptor (fstat/fchown/fchmod), never through the path again.
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, lstatSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

/** The path holds something that is not a plain directory of ours: it is left exactly as it is. */
export class UnsafeDirectoryError extends Error {}

/**
 * `dir` exists, is a real directory and is private (0700 at most) to `owner` (default: this process's user). One
 * we own (just created, or root's) is handed to `owner`; one of anybody else's is refused.
 */
export function ensurePrivateDirectory(dir: string, owner?: { uid: number; gid: number }): void {
  mkdirSync(dirname(dir), { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Refused already; lstat only words the message (Linux says ENOTDIR for a symlink opened this way).
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new UnsafeDirectoryError(`${dir} is ${lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}`);
    throw error;
  }
  try {
    const info = fstatSync(fd);
    const self = process.getuid?.();
    const wanted = owner?.uid ?? self;
    if (wanted !== undefined && info.uid !== wanted) {
      if (!owner || info.uid !== self) throw new UnsafeDirectoryError(`${dir} belongs to another user (uid ${info.uid})`);
      fchownSync(fd, owner.uid, owner.gid);
    }
    if ((info.mode & 0o077) !== 0) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}
