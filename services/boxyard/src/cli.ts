// The `boxyard` command but `terminal-agent` (main.ts): dev (everything on one machine), serve <service> (one service
// from a config file), serve all (every service from one host config file), backup/restore, the operator.
import { parseArgs } from 'node:util';
import { ConfigError, LogFormatError, logFormat, startTelemetry } from '@boxyard/kit';
import { dev } from './dev.ts';
import { findService, services } from './services.ts';

const usage = `usage: boxyard <command>
  dev                              run every service on this machine (embedded PostgreSQL, local storage)
  serve <service> [--config FILE]  run one service (${services.map((s) => s.name).join(', ')})
  serve all [--config FILE]        run every service on a host from one file (default /etc/boxyard/boxyard.yaml)
  backup <dir|s3://bucket/prefix> [--config FILE] [--service NAME]
                                   copy the installation (boxyard dev's, or --config's; or one service from its serve
                                   config) into a new directory or an empty S3 prefix, while it runs
  restore <dir|s3://bucket/prefix> [--config FILE] [--service NAME]
                                   restore a backup into an empty installation (or one service's empty schema/storage)
                                   S3: AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY[, AWS_REGION]
  terminal-agent                   the shell agent of one terminal session (the command of a session pod)
  operator [flags]                 the Kubernetes operator (boxyard operator --help)
Configuration: a YAML file plus BOXYARD_<KEY PATH> environment overrides ('.' written as '__').
Logs: one readable line per record on a terminal, JSON lines otherwise (a pod, systemd, a pipe); BOXYARD_LOG_FORMAT=json|pretty chooses.`;

export async function cli(argv: string[]): Promise<void> {
  logFormat(); // a misspelt BOXYARD_LOG_FORMAT stops here, before anything starts
  // The operator parses its own flags.
  if (argv[0] === 'operator') {
    const { operatorCli, operatorUsage } = await import('@boxyard/operator');
    if (argv.includes('--help') || argv.includes('-h')) return void console.log(operatorUsage);
    startTelemetry('boxyard-operator');
    return operatorCli(argv.slice(1));
  }
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string', short: 'c' }, service: { type: 'string' }, 'result-file': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  const [command, name] = positionals;
  if (values.help || !command) {
    console.log(usage);
    return;
  }
  if (command === 'dev') {
    startTelemetry('boxyard-dev');
    return dev();
  }
  if (command === 'serve' && name === 'all') {
    startTelemetry('boxyard');
    const { serveAll } = await import('./serve-all.ts');
    return serveAll(values.config);
  }
  if (command === 'serve') {
    const service = name ? findService(name) : undefined;
    if (!service) throw new UsageError(`unknown service '${name ?? ''}'; one of: ${services.map((s) => s.name).join(', ')}, all`);
    startTelemetry(`boxyard-${service.name}`);
    const running = await service.serve(values.config);
    const shutdown = () => void running.close().then(() => process.exit(0));
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
    return;
  }
  if (command === 'backup' || command === 'restore') {
    if (!name || positionals.length > 2)
      throw new UsageError(`${command} takes one directory or S3 location: boxyard ${command} <dir|s3://bucket/prefix> [--config FILE] [--service NAME]`);
    const { backupCli } = await import('./backup/cli.ts');
    return backupCli(command, name, { configFile: values.config, service: values.service, resultFile: values['result-file'] });
  }
  if (command === 'terminal-agent') throw new UsageError('terminal-agent takes no arguments: its settings are BOXYARD_AGENT_* variables');
  throw new UsageError(`unknown command '${command}'`);
}

class UsageError extends Error {}

/** How a failed command ends: usage errors with status 2 and the message alone, anything else with 1. */
export function exitWith(error: unknown): never {
  // Bad flags (node's parseArgs, the operator's own checks) are usage errors, not crashes.
  const failure = error as { code?: string; constructor?: { name?: string } };
  const badArguments = Boolean(failure.code?.startsWith('ERR_PARSE_ARGS')) || failure.constructor?.name === 'OperatorUsageError';
  if (error instanceof ConfigError || error instanceof UsageError || error instanceof LogFormatError || badArguments) {
    console.error(`boxyard: ${(error as Error).message}`);
    if (error instanceof UsageError) console.error(usage);
    process.exit(2);
  }
  console.error('boxyard: failed to start:', error);
  process.exit(1);
}
