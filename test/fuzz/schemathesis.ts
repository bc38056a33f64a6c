// Runs schemathesis (`st run`, installed by test/tools/schemathesis.sh) against a service's OpenAPI description
// as one caller, and returns what it found. The bounded pass of `make test` is seeded and limited per operation,
// so it is reproducible and fast; FUZZ_LONG=1 (`make fuzz`) raises the limits and adds every check and the
// stateful phase.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const installer = fileURLToPath(new URL('../tools/schemathesis.sh', import.meta.url));
/** What refusals of a request that breaks the description count as (schemathesis.toml says why). */
const CONFIG_FILE = fileURLToPath(new URL('./schemathesis.toml', import.meta.url));

/** The `st` binary; fails with the command that installs it when missing. */
export function schemathesis(): string {
  const path = execFileSync(installer, ['--path'], { encoding: 'utf8' }).trim();
  if (!existsSync(path)) throw new Error(`schemathesis is not installed (${path}): run \`make test-deps\` (test/tools/schemathesis.sh).`);
  return path;
}

export const LONG = process.env.FUZZ_LONG === '1';

/** What `make test` checks: a caller can never cause a 5xx, and every answer is one the description promises. */
const BOUNDED_CHECKS = [
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_schema_conformance',
  'response_headers_conformance',
  'unsupported_method',
];

export interface FuzzOptions {
  /** The OpenAPI description's URL (its `servers` entry names the base URL). */
  schemaUrl: string;
  /** Headers sent with every request: the caller's credentials. */
  headers?: Record<string, string>;
  /** Cases per operation (bounded pass); the long pass multiplies it. */
  maxExamples?: number;
  seed?: number;
  /** Operations left out, as a path regex (routes that are not JSON APIs). */
  excludePathRegex?: string;
  /** Checks added to the bounded set. */
  extraChecks?: string[];
  /** The server speaks HTTPS with a self-signed certificate. */
  insecureTls?: boolean;
}

export interface FuzzResult {
  exitCode: number;
  /** schemathesis' report: the failures with a curl command reproducing each. */
  output: string;
  /** Test cases generated and sent. */
  cases: number;
  operations: number;
}

export async function fuzz(options: FuzzOptions): Promise<FuzzResult> {
  const dir = await mkdtemp(join(tmpdir(), 'fuzz-'));
  const maxExamples = (options.maxExamples ?? 5) * (LONG ? Number(process.env.FUZZ_FACTOR ?? 20) : 1);
  const args = [
    '--config-file',
    CONFIG_FILE,
    'run',
    options.schemaUrl,
    // FUZZ_SEED (e.g. `FUZZ_SEED=$RANDOM make fuzz`) explores other cases than the fixed seed of `make test`.
    '--seed',
    String(process.env.FUZZ_SEED ?? options.seed ?? 1),
    '--max-examples',
    String(maxExamples),
    '--checks',
    LONG ? 'all' : [...BOUNDED_CHECKS, ...(options.extraChecks ?? [])].join(','),
    // "Schema-valid request rejected" flags every rule a JSON schema cannot say (password policy, "not your own
    // account"): run it on purpose with FUZZ_ACCEPTANCE=1 to tighten the descriptions.
    ...(LONG && process.env.FUZZ_ACCEPTANCE !== '1' ? ['--exclude-checks', 'positive_data_acceptance'] : []),
    '--phases',
    LONG ? 'examples,coverage,fuzzing,stateful' : 'examples,coverage,fuzzing',
    // One worker: the order of requests is the same each run (reproducible), and hypothesis' lambda
    // introspection is not thread-safe on Python 3.11 ("AST constructor recursion depth mismatch").
    '--workers',
    '1',
    '--generation-database',
    'none',
    '--suppress-health-check',
    'all',
    '--request-timeout',
    '20',
    '--no-color',
    '--output-truncate',
    'false',
    '--report',
    'junit',
    '--report-junit-path',
    join(dir, 'junit.xml'),
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`);
  if (options.excludePathRegex) args.push('--exclude-path-regex', options.excludePathRegex);
  if (options.insecureTls) args.push('--tls-verify', 'false');
  try {
    const { exitCode, output } = await new Promise<{ exitCode: number; output: string }>((resolve, reject) => {
      // In the scratch directory: st keeps a replay database in ./.schemathesis.
      const child = spawn(schemathesis(), args, {
        cwd: dir,
        env: { ...process.env, SCHEMATHESIS_HOOKS: '', NO_COLOR: '1', COLUMNS: '160' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ exitCode: code ?? 1, output: out }));
    });
    if (process.env.FUZZ_VERBOSE) console.log(output);
    const junit = await readFile(join(dir, 'junit.xml'), 'utf8').catch(() => '');
    const operations = (junit.match(/<testcase /g) ?? []).length;
    // An empty description (the second service's) is nothing to fuzz, not a failure; st reports it as a usage error.
    const empty = exitCode === 2 && output.includes('The schema defines no API operations');
    return { exitCode: empty ? 0 : exitCode, output, cases: casesIn(output), operations };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** "Test cases: 1234 generated, ..." from the summary. */
function casesIn(output: string): number {
  const match = /Test cases:\s*(\d+) generated/.exec(output);
  return match ? Number(match[1]) : 0;
}
