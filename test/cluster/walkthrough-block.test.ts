// Without a real node: the guide's walkthrough blocks are where walkthrough.ts looks for them, are valid bash, and
// still do what the newcomer needed (no aliases, an organization before the box, credentials for wget). The run
// itself is walkthrough.ts, in the real-cluster suite.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './boxyard-cluster.ts';
import { walkthroughBlock } from './walkthrough.ts';

const guide = readFileSync(join(repoRoot, 'docs', 'kubernetes.md'), 'utf8');

describe('the cluster walkthrough blocks of docs/kubernetes.md', () => {
  it('are found after their markers and parse as bash', () => {
    for (const name of ['up', 'down']) {
      const block = walkthroughBlock(guide, name);
      expect(block.length).toBeGreaterThan(0);
      execFileSync('bash', ['-n'], { input: block });
    }
    expect(walkthroughBlock(guide, 'up').split('\n')[0]).toMatch(/^make cluster\b/);
    expect(walkthroughBlock(guide, 'down')).toMatch(/^make cluster-down\b/m);
  });

  it('put the pinned clients first on PATH, publish into an organization, and pass credentials to wget', () => {
    const up = walkthroughBlock(guide, 'up');
    expect(up.split('\n').filter((line) => line.trimStart().startsWith('alias '))).toEqual([]);
    expect(up).toMatch(/PATH=\$B\/bin:\$PATH/);
    expect(up.indexOf('/api/organization >')).toBeGreaterThan(0);
    expect(up.indexOf('/api/organization >')).toBeLessThan(up.indexOf('$O/box >'));
    expect(up).toMatch(/vagrant box add acme\/hello/);
    const wget = up.slice(up.indexOf('wget --mirror'));
    expect(wget.slice(0, wget.indexOf('files.example.com/docs/'))).toContain('--user=admin --password="$FILES_PASS"');
  });
});
