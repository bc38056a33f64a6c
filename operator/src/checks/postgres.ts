// PostgreSQL as the operator sees it: before a rollout, the URL from the Secret must connect and the service must be
// able to create (or use) its schema; on deletion with deletionPolicy Delete, the schema is dropped.
import type pg from 'pg';
import { CheckFailure, NETWORK_ERRORS } from './check-failure.ts';
import { ignoreError } from '@boxyard/kit';

const TIMEOUT_MS = 5_000;

/** user@host:port/database, for messages: never the password. */
export function describeDatabase(url: string): string {
  try {
    const u = new URL(url);
    return `${decodeURIComponent(u.username) || '(default user)'}@${u.hostname}:${u.port || 5432}${u.pathname || '/'}`;
  } catch {
    return '(unparseable URL)';
  }
}

function parse(url: string, where: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CheckFailure('InvalidDatabaseURL', `${where} is not a URL: it must look like postgres://user:password@host:5432/database`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new CheckFailure('InvalidDatabaseURL', `${where} has the scheme "${parsed.protocol.replace(/:$/, '')}"; it must be a postgres:// URL`);
  }
}

async function connect(url: string, where: string): Promise<pg.Client> {
  parse(url, where);
  // Loaded on first use: an operator with nothing to check does not carry the driver.
  const { default: driver } = await import('pg');
  const client = new driver.Client({
    connectionString: url,
    connectionTimeoutMillis: TIMEOUT_MS,
    query_timeout: TIMEOUT_MS,
    application_name: 'boxyard-operator',
  });
  client.on('error', () => {}); // a connection dropped after use must not crash the operator
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(ignoreError("the check's connection may already be gone"));
    throw toFailure(error, url, where);
  }
}

function toFailure(error: unknown, url: string, where: string): CheckFailure {
  const code = (error as { code?: string }).code ?? '';
  const message = (error as Error).message || code;
  const target = describeDatabase(url);
  if (code === '28P01' || code === '28000') {
    return new CheckFailure(
      'DatabaseAuthenticationFailed',
      `PostgreSQL refused the credentials for ${target} (${message}): fix the user or password in ${where}`,
    );
  }
  if (code === '3D000') return new CheckFailure('DatabaseNotFound', `the database of ${target} does not exist (${message}): create it, or fix ${where}`);
  if (NETWORK_ERRORS.has(code) || /timeout|terminated/i.test(message)) {
    return new CheckFailure(
      'DatabaseUnreachable',
      `cannot connect to PostgreSQL at ${target}: ${message}. Check the host and port in ${where} and that the operator's pod can reach it`,
    );
  }
  return new CheckFailure('DatabaseCheckFailed', `PostgreSQL at ${target}: ${message}`);
}

/**
 * Connects, and makes sure the schema exists: creates it when it does not (and the user may), so that `created`
 * tells which schemas are the resource's own (deletionPolicy Delete drops only those). `where` names the Secret key.
 */
export async function checkDatabase(url: string, schema: string, where: string): Promise<{ created: boolean }> {
  const client = await connect(url, where);
  try {
    const { rows } = await client.query<{ user: string; database: string; can_create: boolean; schema_exists: boolean }>(
      `select current_user as user, current_database() as database,
              has_database_privilege(current_database(), 'CREATE') as can_create,
              exists(select 1 from pg_namespace where nspname = $1) as schema_exists`,
      [schema],
    );
    const row = rows[0];
    if (row && !row.schema_exists && !row.can_create) {
      throw new CheckFailure(
        'DatabasePermissionDenied',
        `user "${row.user}" may not create the schema "${schema}" in database "${row.database}": run GRANT CREATE ON DATABASE "${row.database}" TO "${row.user}", or create the schema and make the user its owner`,
      );
    }
    if (row?.schema_exists) return { created: false };
    try {
      await client.query(`create schema ${quoteIdentifier(schema)}`);
      return { created: true };
    } catch (error) {
      // Created by someone else (a service replica's migration) between the check and here: not ours.
      if ((error as { code?: string }).code === '42P06') return { created: false };
      throw error;
    }
  } catch (error) {
    if (error instanceof CheckFailure) throw error;
    throw toFailure(error, url, where);
  } finally {
    await client.end().catch(ignoreError("the check's connection may already be gone"));
  }
}

const quoteIdentifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** DROP SCHEMA ... CASCADE: the service's tables and everything in them. Idempotent. */
export async function dropSchema(url: string, schema: string, where: string): Promise<void> {
  const client = await connect(url, where);
  try {
    await client.query(`drop schema if exists ${quoteIdentifier(schema)} cascade`);
  } catch (error) {
    throw toFailure(error, url, where);
  } finally {
    await client.end().catch(ignoreError("the check's connection may already be gone"));
  }
}
