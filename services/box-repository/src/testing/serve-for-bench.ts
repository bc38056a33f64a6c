// Runs the box repository in its own process for the bench (so its memory can be measured apart from the
// load generator). Config comes as JSON in BOXREPO_BENCH_CONFIG; prints `listening <url>` once ready. Traces
// when OTEL_* variables say so, as `boxyard serve` does (the tracing bench compares it on and off).
import { startTelemetry } from '@boxyard/kit';
import { startBoxRepository } from '../service.ts';
import { boxRepositoryConfigSchema } from '../config.ts';

const telemetry = startTelemetry('boxyard-box-repository');
const config = boxRepositoryConfigSchema.parse(JSON.parse(process.env.BOXREPO_BENCH_CONFIG ?? '{}'));
const running = await startBoxRepository(config, { print: () => {} });
console.log(`listening ${running.url}`);
const stop = () =>
  void running
    .close()
    .then(() => telemetry.shutdown())
    .then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
