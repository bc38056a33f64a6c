#!/usr/bin/env node
// The operator as its own process (tests start it, kill -9 it, run two of them): node operator/src/main.ts [flags]
import { startTelemetry } from '@boxyard/kit';
import { OperatorUsageError, operatorCli, operatorUsage } from './cli.ts';

startTelemetry('boxyard-operator');

operatorCli(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof OperatorUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`boxyard operator: ${(error as Error).message}\n${operatorUsage}`);
    process.exit(2);
  }
  console.error('boxyard operator: failed to start:', error);
  process.exit(1);
});
