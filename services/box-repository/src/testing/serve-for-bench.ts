// Runs the box repository in its own process for the bench (so its memory can be measured apart from the
// load generator). Config comes as JSON in BOXREPO_BENCH_CONFIG; prints `listening <url>` once ready.
import { startBoxRepository } from '../app.ts';
import { boxRepositoryConfigSchema } from '../config.ts';

const config = boxRepositoryConfigSchema.parse(JSON.parse(process.env.BOXREPO_BENCH_CONFIG ?? '{}'));
const running = await startBoxRepository(config, { print: () => {} });
console.log(`listening ${running.url}`);
const stop = () => void running.close().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
