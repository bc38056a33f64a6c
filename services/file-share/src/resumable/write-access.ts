// Who may write where, for a resumable upload: one function the routes call when an upload is created and again
// when it completes (the answer may have changed in between: a revoked key, a lost permission, a new file at the
// path). Today's rules are those of a plain upload (files/upload.ts): the `uploads` permission inside the caller's
// scope (an API key's folder), and replacing an existing file needs `delete` too.
//
// The seam: a file-request link (an upload-only link to one folder) can supply its own WriteAccess instead of
// principalWriteAccess — owner `request:<id>`, paths confined to its folder, mayReplace false, its own size and
// count limits — and the tus routes stay as they are.
import { HttpError } from '@boxyard/kit';
import { requirePermission, type Principal } from '../auth/principal.ts';
import { checkNewPath } from '../paths/share-path.ts';

export interface WriteGrant {
  /** Stable name of whoever may continue the upload (`user:<id>`, `key:<id>`, ...): another caller gets 404. */
  owner: string;
  /** The user to record as the file's creator, if any. */
  userId: string | null;
  /** An existing file at the path may be replaced. */
  mayReplace: boolean;
  /** Largest file this grant accepts (bytes). */
  maxBytes: number;
}

/** Throws the refusal (401/403, 400 for a bad path) or answers what the caller may do at `path`. */
export type WriteAccess = (path: string) => WriteGrant;

export function ownerOf(principal: Principal): string | undefined {
  if (principal.key) return `key:${principal.key.id}`;
  if (principal.user) return `user:${principal.user.id}`;
  return undefined;
}

/** Today's rules for a signed-in caller or an API key. */
export function principalWriteAccess(principal: Principal, maxBytes: number): WriteAccess {
  return (path) => {
    requirePermission(principal, 'uploads', path);
    checkNewPath(path);
    const owner = ownerOf(principal);
    if (!owner) throw new HttpError(401, 'Authentication required');
    return { owner, userId: principal.user?.id ?? null, mayReplace: principal.permissions.has('delete'), maxBytes };
  };
}
