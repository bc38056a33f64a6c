import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { rateLimitSchema, sessionSchema, storageSchema } from './common.ts';
import { ConfigError, loadConfig } from './load-config.ts';

const schema = z.strictObject({
  name: z.string().default('svc'),
  rate_limiting: rateLimitSchema,
  storage: storageSchema.optional(),
  session: sessionSchema.optional(),
});

const dir = mkdtempSync(join(tmpdir(), 'config-test-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('loadConfig', () => {
  it('applies schema defaults when nothing is given', () => {
    expect(loadConfig(schema, { env: {} })).toEqual({
      name: 'svc',
      rate_limiting: { enabled: true, max_requests: 100, window_seconds: 600, on_store_error: 'allow' },
    });
  });

  it('reads the YAML file and lets BOXYARD_<KEY PATH> variables override it, typed by the schema', () => {
    const path = file('a.yaml', 'name: from-file\nrate_limiting:\n  max_requests: 5\n');
    const config = loadConfig(schema, {
      file: path,
      env: { BOXYARD_RATE_LIMITING__MAX_REQUESTS: '7', BOXYARD_RATE_LIMITING__ENABLED: 'false', BOXYARD_NAME: '123', BOXYARD_CACHE: '/not/a/key' },
    });
    expect(config.name).toBe('123'); // a string key stays a string even when it looks like a number
    expect(config.rate_limiting).toEqual({ enabled: false, max_requests: 7, window_seconds: 600, on_store_error: 'allow' });
  });

  it('reads *_file keys from files (secrets), trimming the final newline', () => {
    const secret = file('secret', `${'s'.repeat(40)}\n`);
    const config = loadConfig(schema, { env: { BOXYARD_SESSION__SECRET_FILE: secret, BOXYARD_SESSION__ISSUER: 'i', BOXYARD_SESSION__AUDIENCE: 'a' } });
    expect(config.session?.secret).toBe('s'.repeat(40));
  });

  it('stops with a message naming the key and the rule', () => {
    expect(() => loadConfig(schema, { env: { BOXYARD_RATE_LIMITING__MAX_REQUESTS: '-3' } })).toThrow(
      /config: rate_limiting\.max_requests: .*>0.* \(rule: too_small\)/,
    );
    const short = () => loadConfig(schema, { env: { BOXYARD_SESSION__SECRET: 'short', BOXYARD_SESSION__ISSUER: 'i', BOXYARD_SESSION__AUDIENCE: 'a' } });
    expect(short).toThrow(ConfigError);
    expect(short).toThrow(/config: session\.secret: must be at least 32 characters/);
  });

  it('refuses unknown keys in the file (typos are errors, not silently ignored)', () => {
    const path = file('typo.yaml', 'rate_limiting:\n  max_request: 5\n');
    expect(() => loadConfig(schema, { file: path, env: {} })).toThrow(/config: rate_limiting: .*max_request.*\(rule: unrecognized_keys\)/);
  });

  it('validates the chosen storage driver', () => {
    const path = file('s3.yaml', 'storage:\n  driver: s3\n  endpoint: http://127.0.0.1:9000\n  access_key: a\n  secret_key: b\n  bucket: Bad_Bucket\n');
    expect(() => loadConfig(schema, { file: path, env: {} })).toThrow(/config: storage\.bucket: must be a valid S3 bucket name/);
  });

  it('names a missing or unreadable file', () => {
    expect(() => loadConfig(schema, { file: join(dir, 'missing.yaml'), env: {} })).toThrow(/cannot read .*missing\.yaml \(ENOENT\)/);
    expect(() => loadConfig(schema, { env: { BOXYARD_SESSION__SECRET_FILE: join(dir, 'nope') } })).toThrow(/config: session\.secret_file: cannot read/);
    expect(() => loadConfig(schema, { file: file('bad.yaml', 'a: [1,'), env: {} })).toThrow(/is not valid YAML/);
  });
});
