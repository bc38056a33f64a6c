// argon2id password hashes (@node-rs/argon2 defaults: m=19456 KiB, t=2, p=1, the OWASP baseline).
import { hash, verify } from '@node-rs/argon2';

export const hashPassword = (password: string): Promise<string> => hash(password);

/** False for a wrong password or a malformed hash; never throws on caller input. */
export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  try {
    return await verify(hashed, password);
  } catch {
    return false;
  }
}
