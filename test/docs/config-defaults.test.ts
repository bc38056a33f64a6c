// The configuration tables of the READMEs and docs/configuration.md say each key's default: every default they
// state as a plain value (a number, true/false, a word) must be the one the service's config schema gives. A row
// whose default cell is prose, or names more or fewer values than keys, is not compared.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { services } from '@boxyard/registry/services.ts';

const root = new URL('../../', import.meta.url).pathname;

/** The service's config with every default filled in (only what has no default given). */
function defaultsOf(name: string): Record<string, unknown> {
  const service = services.find((s) => s.name === name)!;
  const minimal: Record<string, unknown> = { database: { url: 'postgres://u@h/d' }, session: { secret: 'x'.repeat(40) } };
  if (name === 'box-repository' || name === 'file-share') minimal.storage = { driver: 'local', root: '/tmp' };
  // The config schema, as the service's cluster kind names it.
  return service.kind!.configSchema.parse(minimal) as Record<string, unknown>;
}

const valueAt = (config: Record<string, unknown>, key: string): unknown =>
  key.split('.').reduce<unknown>((node, name) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[name] : undefined), config);

const PLAIN = /^(?:-?\d+(?:\.\d+)?|true|false|[a-z][a-z0-9_-]*)$/;

/** `a.b` / `.c`, `a.b, a.c` or `a.b` / `c.d`: the keys of a first cell; `.c` continues the first key's section. */
function keysOf(cell: string): string[] {
  const parts = cell
    .split(/[/,]/)
    .map((part) => part.replaceAll('`', '').trim())
    .filter(Boolean);
  const first = parts[0] ?? '';
  const section = first.slice(0, first.lastIndexOf('.'));
  return parts.map((part) => (part.startsWith('.') ? `${section}${part}` : part));
}

/** The plain values of a default cell, or undefined when it says more than values (prose, units, alternatives). */
function valuesOf(cell: string): string[] | undefined {
  // A trailing remark in parentheses (`5368709120` (5 GiB)) is not a value.
  const open = cell.lastIndexOf('(');
  const text = cell.endsWith(')') && open > 0 ? cell.slice(0, open) : cell;
  const parts = text.split(/[/,]/).map((part) => part.replaceAll('`', '').trim());
  return parts.length > 0 && parts.every((part) => PLAIN.test(part)) ? parts : undefined;
}

interface Row {
  file: string;
  line: number;
  key: string;
  stated: string;
}

/** The rows of the `| key | default | …` tables of a Markdown file, each key with the default it states. */
function statedDefaults(file: string, inSection: (heading: string) => boolean = () => true): Row[] {
  const rows: Row[] = [];
  let heading = '';
  let inTable = false;
  for (const [index, line] of readFileSync(`${root}${file}`, 'utf8').split('\n').entries()) {
    if (line.startsWith('#')) heading = line;
    if (!line.startsWith('|')) {
      inTable = false;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    if (/^key$/i.test(cells[0] ?? '') && /^default$/i.test(cells[1] ?? '')) {
      inTable = true;
      continue;
    }
    if (!inTable || !inSection(heading) || cells.length < 2 || /^-+$/.test(cells[0] ?? '')) continue;
    const keys = keysOf(cells[0]!);
    const values = valuesOf(cells[1]!);
    if (!values || values.length !== keys.length || !keys.every((key) => /^[a-z_]+(\.[a-z_]+)*$/.test(key))) continue;
    keys.forEach((key, i) => rows.push({ file, line: index + 1, key, stated: values[i]! }));
  }
  return rows;
}

/** Rows whose stated default is not the service's (keys the schema does not have are not this test's business). */
function disagreements(service: string, rows: Row[]): string[] {
  const config = defaultsOf(service);
  return rows.flatMap(({ file, line, key, stated }) => {
    const actual = valueAt(config, key);
    if (actual === undefined || actual === null || typeof actual === 'object') return [];
    return String(actual) === stated ? [] : [`${file}:${line} ${key}: says ${stated}, ${service} defaults to ${String(actual)}`];
  });
}

describe("documented config defaults are the services' defaults", () => {
  it.each([
    ['box-repository', 'services/box-repository/README.md'],
    ['file-share', 'services/file-share/README.md'],
    ['terminal', 'services/terminal/README.md'],
  ])('%s: its README', (service, file) => {
    const rows = statedDefaults(file);
    expect(rows.length).toBeGreaterThan(5);
    expect(disagreements(service, rows)).toEqual([]);
  });

  it("docs/configuration.md: the shared sections (every service) and each service's own", () => {
    const doc = 'docs/configuration.md';
    const shared = statedDefaults(doc, (heading) => heading.startsWith('## Shared sections'));
    expect(shared.length).toBeGreaterThan(5);
    const own = (name: string) => statedDefaults(doc, (heading) => heading.toLowerCase().startsWith(`## ${name}`));
    expect([
      ...['file-share', 'terminal'].flatMap((service) => disagreements(service, shared)),
      // The box repository's own limits are stated in its section (it overrides the shared rate limit).
      ...disagreements(
        'box-repository',
        shared.filter((row) => !row.key.startsWith('rate_limiting.')),
      ),
      ...disagreements('box-repository', own('box repository')),
      ...disagreements('file-share', own('file share')),
      ...disagreements('terminal', own('terminal')),
    ]).toEqual([]);
  });
});
