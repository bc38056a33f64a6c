import type { FuzzResult } from './schemathesis.ts';

/** The failure message of a fuzz test: schemathesis' own report, which carries a curl command per failure. */
export const reportOf = (result: FuzzResult) => `schemathesis found problems (exit ${result.exitCode}):\n${result.output}`;
