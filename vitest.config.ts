import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['services/*/src/**/*.test.ts', 'operator/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    globalSetup: ['test/harness/global-setup.ts'],
    // Two cores: two files at a time; isolation is by database and bucket, not by process.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/harness/summary-reporter.ts'],
  },
});
