// The embedded defaults most services start from in `boxyard dev`: the installation's database, a session secret
// generated once (kept in the home's secrets file under `<service>_session_secret`, `-` as `_`), the first admin's
// password when BOXYARD_ADMIN_PASSWORD is set, and, for a service that stores files, local storage under
// $BOXYARD_HOME/<service> (the driver wants an existing directory) with its state (a self-signed certificate) beside.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { DevContext } from '../service-definition.ts';

export async function devDefaults(context: DevContext, service: string, options: { localStorage?: boolean } = {}): Promise<Record<string, unknown>> {
  const defaults: Record<string, unknown> = {
    database: { url: context.databaseUrl },
    session: { secret: await context.secret(`${service.replaceAll('-', '_')}_session_secret`) },
    ...(context.adminPassword ? { admin: { password: context.adminPassword } } : {}),
  };
  if (options.localStorage) {
    const root = join(context.home, service);
    await mkdir(root, { recursive: true, mode: 0o700 });
    defaults.storage = { driver: 'local', root };
    defaults.state_dir = join(context.home, 'state', service);
  }
  return defaults;
}
