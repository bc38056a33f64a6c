// The home's secrets.json as backup and restore see it: the raw bytes (copied verbatim into a backup) and the
// values (the embedded PostgreSQL's password, the services' session keys).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { secretsFile } from '../home.ts';
import { BackupError } from './errors.ts';

export interface HomeSecrets {
  /** The file as it is, or undefined when the home has none. */
  text: string | undefined;
  values: Record<string, string>;
}

export function parseSecrets(text: string, where: string): Record<string, string> {
  try {
    const values = JSON.parse(text) as unknown;
    if (typeof values !== 'object' || values === null || Array.isArray(values)) throw new Error('not an object');
    return values as Record<string, string>;
  } catch (error) {
    throw new BackupError(`${where} is not a valid secrets file (${(error as Error).message})`);
  }
}

export async function readHomeSecrets(home: string): Promise<HomeSecrets> {
  const file = secretsFile(home);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { text: undefined, values: {} };
    throw error;
  }
  return { text, values: parseSecrets(text, file) };
}

/**
 * A DevContext `secret` over fixed values. A secret the values lack is made up (and remembered in `values`):
 * a backup never needs it, a restore keeps it in the restored secrets.json.
 */
export const secretsFrom = (values: Record<string, string>) => async (name: string) => (values[name] ??= randomBytes(32).toString('base64url'));
