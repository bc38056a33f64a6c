// Fuzzes the second service with schemathesis. Its description lists no paths (seed 3), so what is fuzzed is
// that the description loads over its HTTPS listener and that nothing undocumented answers as if it existed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecondService, type SecondService } from '@boxyard/second-service/service.ts';
import { secondServiceConfigSchema } from '@boxyard/second-service/config.ts';
import { fuzz } from './schemathesis.ts';
import { reportOf } from './report.ts';

let service: SecondService;
beforeAll(async () => {
  service = await startSecondService(secondServiceConfigSchema.parse({ server: { host: '127.0.0.1', port: 0 }, logging: { level: 'silent' } }));
});
afterAll(() => service?.close());

describe('second service under schemathesis', () => {
  it('serves a description the fuzzer loads, with no operation that fails it', async () => {
    const result = await fuzz({ schemaUrl: `${service.url}/openapi.json`, insecureTls: true });
    console.log(`[fuzz] second-service (anonymous; it has no accounts): ${result.cases} cases over ${result.operations} operations`);
    expect(result.output).toContain('Loaded specification');
    expect(result.exitCode, reportOf(result)).toBe(0);
  });
});
