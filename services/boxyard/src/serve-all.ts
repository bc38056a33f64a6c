// `boxyard serve all`: the host install. Every service in one process, as `boxyard dev` runs them, but described by
// one config file (home, external or embedded PostgreSQL, each service's own keys); deploy/ has the example file
// and the systemd unit that runs this command.
import { DEFAULT_HOST_CONFIG, loadHostConfig } from './host-config.ts';
import { runAll } from './run-all.ts';

/** Without `--config`, the default file; when that one does not exist, every default applies. */
export const serveAll = (configFile: string | undefined): Promise<void> =>
  runAll({ label: 'boxyard serve all', ...loadHostConfig(configFile ?? DEFAULT_HOST_CONFIG, { missingOk: configFile === undefined }) });
