// `boxyard dev`: the product on one machine. An embedded PostgreSQL and every service on loopback, state under
// $BOXYARD_HOME (default ./.boxyard) so data survives restarts; secrets generated on first start, never shipped.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { startPostgres } from './embedded-postgres.ts';
import { services, type RunningService } from './services.ts';

const DEFAULT_DEV_POSTGRES_PORT = 15432;

async function loadSecrets(home: string): Promise<Record<string, string>> {
  const file = join(home, 'secrets.json');
  let secrets: Record<string, string> = {};
  try {
    secrets = JSON.parse(await readFile(file, 'utf8')) as Record<string, string>;
  } catch {
    // first start
  }
  const wanted = ['postgres_password', 'session_secret'];
  if (wanted.every((k) => secrets[k])) return secrets;
  for (const key of wanted) secrets[key] ??= randomBytes(32).toString('base64url');
  await writeFile(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  return secrets;
}

export async function dev(): Promise<void> {
  const home = resolve(process.env.BOXYARD_HOME ?? '.boxyard');
  await mkdir(home, { recursive: true, mode: 0o755 });
  const secrets = await loadSecrets(home);
  const port = Number(process.env.BOXYARD_DEV_POSTGRES_PORT ?? DEFAULT_DEV_POSTGRES_PORT);
  console.log(`boxyard dev: state in ${home}`);
  const postgres = await startPostgres({ dir: join(home, 'postgres'), port, persistent: true, password: secrets.postgres_password! });
  console.log(`  postgres        ${postgres.version} on 127.0.0.1:${postgres.port} (embedded)`);

  const running: RunningService[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('\nboxyard dev: stopping ...');
    await Promise.allSettled(running.map((s) => s.close()));
    await postgres.stop();
    console.log('boxyard dev: stopped');
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  try {
    for (const service of services) {
      const started = await service.dev({ home, postgresAdminUrl: postgres.adminUrl, secrets });
      running.push(started);
      console.log(`  ${service.name.padEnd(15)} ${started.url}`);
    }
  } catch (error) {
    console.error(`boxyard dev: ${(error as Error).message}`);
    await stop(1);
    return;
  }
  console.log('Ready. Press Ctrl-C to stop.');
}
