import { describe, expect, it } from 'vitest';
import { agentRuntime } from './agent-runtime.ts';

describe('a local agent gets the gateway heap settings and the shared compile cache, nothing else of its runtime', () => {
  it('takes the launcher flags (node-flags) and the malloc settings', () => {
    const runtime = agentRuntime(
      ['--max-semi-space-size=16', '--external-memory-accounted-in-global-limit'],
      { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', PATH: '/usr/bin' },
      '/run/gw/compile-cache',
    );
    expect(runtime).toEqual({
      flags: ['--max-semi-space-size=16', '--external-memory-accounted-in-global-limit'],
      env: { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072', NODE_COMPILE_CACHE: '/run/gw/compile-cache' },
    });
  });

  it('accepts V8 spellings with underscores and an old-space cap', () => {
    expect(agentRuntime(['--max_semi_space_size=8', '--max-old-space-size=512'], {}, '/c').flags).toEqual([
      '--max_semi_space_size=8',
      '--max-old-space-size=512',
    ]);
  });

  it('leaves out inspector, profiler, eval and loader flags and the rest of the environment', () => {
    const runtime = agentRuntime(
      ['--inspect=127.0.0.1:9229', '--cpu-prof', '--input-type=module', '-e', 'x', '--import', 'tsx', '--max-semi-space-size'],
      {
        MALLOC_ARENA_MAX: 'two',
        BOXYARD_DATABASE__URL: 'postgres://secret',
        NODE_OPTIONS: '--inspect',
      },
      '/c',
    );
    expect(runtime).toEqual({ flags: [], env: { NODE_COMPILE_CACHE: '/c' } });
  });
});
