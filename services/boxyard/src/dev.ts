// `boxyard dev`: the product on one machine. An embedded PostgreSQL and every service on loopback, state under
// $BOXYARD_HOME (default ./.boxyard) so data survives restarts; secrets generated on first start, never shipped.
import { DEFAULT_EMBEDDED_POSTGRES_PORT, resolveHome } from './home.ts';
import { runAll } from './run-all.ts';

export const dev = (): Promise<void> =>
  runAll({
    label: 'boxyard dev',
    home: resolveHome(),
    database: { embedded: { port: Number(process.env.BOXYARD_DEV_POSTGRES_PORT ?? DEFAULT_EMBEDDED_POSTGRES_PORT) } },
  });
