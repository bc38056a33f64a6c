// HTTP Basic sends the password with every request, and argon2id is made to be slow (~20 MiB and tens of ms per
// check), so verifying each request would let any client with a valid password burn a core. A credential verified
// once is remembered for a short time under a keyed hash of username and password (the password itself is never
// kept), together with the stored hash it matched: a changed password, a deleted user or a new hash misses at once.
import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';

export interface VerifiedCredentialsOptions {
  /** How long a verified credential is trusted without argon2 (default 60 s). */
  ttlMs?: number;
  /** Most credentials remembered (default 10,000; ~200 bytes each). */
  max?: number;
}

export function createVerifiedCredentials(options: VerifiedCredentialsOptions = {}) {
  // A per-process key: the cache's keys are useless outside this process, and nothing is written anywhere.
  const key = randomBytes(32);
  const cache = new LRUCache<string, { userId: string; passwordHash: string }>({ max: options.max ?? 10_000, ttl: options.ttlMs ?? 60_000 });
  const keyOf = (username: string, password: string) =>
    createHmac('sha256', key).update(username.toLowerCase()).update('\0').update(password).digest('base64url');
  return {
    /** Whether these credentials were verified recently against this very stored hash of this user. */
    has(username: string, password: string, user: { id: string; passwordHash: string }): boolean {
      const entry = cache.get(keyOf(username, password));
      return entry !== undefined && entry.userId === user.id && entry.passwordHash === user.passwordHash;
    },
    remember(username: string, password: string, user: { id: string; passwordHash: string }): void {
      cache.set(keyOf(username, password), { userId: user.id, passwordHash: user.passwordHash });
    },
  };
}
