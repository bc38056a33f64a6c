// `boxyard dev`: the product on one machine. An embedded PostgreSQL and every service on loopback, state under
// $BOXYARD_HOME (default ./.boxyard) so data survives restarts; secrets generated on first start, never shipped.
import { devInstallation } from './host-config.ts';
import { runAll } from './run-all.ts';

export const dev = (): Promise<void> => runAll({ label: 'boxyard dev', ...devInstallation() });
