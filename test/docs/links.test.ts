// Every relative link of the repository's Markdown (README.md, CONTRIBUTING.md, docs/, each package's README)
// names a file that exists and, with `#anchor`, a heading that file has: moving a section must move its links too.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, brokenLinks, findLinks, slug } from './links.ts';

const root = new URL('../../', import.meta.url).pathname;

/** Tracked Markdown files, and new ones not yet added (so a check before `git add` sees them too). */
function markdownFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.md'], { cwd: root, encoding: 'utf8' });
  return [...new Set(out.split('\n').filter((f) => f !== ''))].sort();
}

describe('Markdown links', () => {
  it('every relative link and anchor in the repository resolves', () => {
    const files = markdownFiles();
    for (const required of ['README.md', 'CONTRIBUTING.md', 'docs/configuration.md', 'docs/assumptions.md']) expect(files).toContain(required);
    expect(brokenLinks(root, files)).toEqual([]);
  });

  it('finds links outside code, with titles, angle brackets and parentheses', () => {
    const text = [
      'See [a](a.md), ![img](img/x.png "title") and [b](<b c.md#x>).',
      'Not `[code](nope.md)`, but [wiki](https://example.com/A_(B)) and [p](f(1).md).',
      '```',
      '[fenced](nope.md)',
      '```',
    ].join('\n');
    expect(findLinks(text).map((l) => `${l.line}:${l.target}`)).toEqual(['1:a.md', '1:img/x.png', '1:b c.md#x', '2:https://example.com/A_(B)', '2:f(1).md']);
  });

  it('computes GitHub heading slugs, with -1 for duplicates and not for # inside code', () => {
    expect(slug('Provider sign-in on the web pages (`auth.sign_in`)')).toBe('provider-sign-in-on-the-web-pages-authsign_in');
    expect(slug('Box repository: webhooks')).toBe('box-repository-webhooks');
    expect(slug('Hostile input and failure: the classes closed, their limits')).toBe('hostile-input-and-failure-the-classes-closed-their-limits');
    const set = anchors(['# Title', '## Same', '```', '# not a heading', '```', '## Same', '### [Linked](x.md) heading #', '#nospace'].join('\n'));
    expect([...set].sort()).toEqual(['linked-heading', 'same', 'same-1', 'title']);
  });

  it('reports a missing file, a missing anchor and a link out of the repository; skips external links', () => {
    const dir = mkdtempSync(join(tmpdir(), 'boxyard-links-'));
    try {
      mkdirSync(join(dir, 'docs'));
      writeFileSync(join(dir, 'docs', 'a.md'), '# A\n\n## Part one\n');
      writeFileSync(
        join(dir, 'README.md'),
        [
          '[ok](docs/a.md#part-one) [ok2](#readme) [dir](docs)',
          '# Readme',
          '[gone](docs/b.md) [bad anchor](docs/a.md#part-two)',
          '[up](../x.md) [mail](mailto:a@b.c) [web](http://x/#y)',
        ].join('\n'),
      );
      expect(brokenLinks(dir, ['README.md'])).toEqual([
        'README.md:3: docs/b.md: no such file (docs/b.md)',
        'README.md:3: docs/a.md#part-two: no heading with the anchor #part-two in docs/a.md',
        'README.md:4: ../x.md: points outside the repository',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
