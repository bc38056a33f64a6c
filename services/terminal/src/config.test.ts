import { loadConfig } from '@boxyard/kit';
import { describe, expect, it } from 'vitest';
import { terminalConfigSchema } from './config.ts';

const required = { database: { url: 'postgres://localhost/boxyard' }, session: { secret: 's'.repeat(32) } };

describe('terminal configuration', () => {
  it('has the contract defaults', () => {
    const config = loadConfig(terminalConfigSchema, { defaults: required, env: {} });
    expect(config.server.port).toBe(3002);
    expect(config.database.schema).toBe('terminal');
    expect(config.sessions).toMatchObject({
      idle_timeout_seconds: 1800,
      max_lifetime_seconds: 28_800,
      reattach_grace_seconds: 300,
      per_user_limit: 3,
      global_limit: 100,
      scrollback_bytes: 1_048_576,
    });
    expect(config.backend.kind).toBe('local');
    expect(config.admin.username).toBe('admin');
    expect(config.rate_limiting).toMatchObject({ max_requests: 100, window_seconds: 600 });
  });

  it('takes BOXYARD_* overrides and names the bad key', () => {
    const config = loadConfig(terminalConfigSchema, {
      defaults: required,
      env: { BOXYARD_SESSIONS__PER_USER_LIMIT: '5', BOXYARD_ALLOWED_ORIGINS: '["https://term.example.com"]' },
    });
    expect(config.sessions.per_user_limit).toBe(5);
    expect(config.allowed_origins).toEqual(['https://term.example.com']);
    expect(() => loadConfig(terminalConfigSchema, { defaults: required, env: { BOXYARD_SESSIONS__IDLE_TIMEOUT_SECONDS: '-1' } })).toThrow(
      /config: sessions\.idle_timeout_seconds/,
    );
    expect(() => loadConfig(terminalConfigSchema, { defaults: { ...required, allowed_origins: ['https://x.example/path'] }, env: {} })).toThrow(
      /allowed_origins\.0: must be an origin/,
    );
  });

  it('needs the pod image for the kubernetes backend, and fills in the pod defaults', () => {
    expect(() => loadConfig(terminalConfigSchema, { defaults: { ...required, backend: { kind: 'kubernetes' } }, env: {} })).toThrow(
      /backend\.kubernetes: is required/,
    );
    const config = loadConfig(terminalConfigSchema, {
      defaults: { ...required, backend: { kind: 'kubernetes', kubernetes: { namespace: 'terms', image: 'img:1' } } },
      env: {},
    });
    expect(config.backend.kubernetes).toMatchObject({
      image_pull_policy: 'IfNotPresent',
      shell: '/bin/bash',
      pod_ready_timeout_seconds: 120,
      agent_port: 7681,
      resources: { limits: { cpu: '1', memory: '512Mi' } },
    });
  });
});
