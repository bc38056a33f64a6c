// The figures page `make bench` writes (docs/performance/latest.md): one Markdown table per section, each under the
// facts of the run that measured it (when, which checkout, which machine and components). A run of some sections
// (ONLY=…) replaces only their blocks and keeps the others byte for byte, so a partial run never wipes the figures
// of another; the header and the summary are rebuilt from the blocks on every write. Pure: no clock, no files.
import type { BenchRow } from './env.ts';

/** What a section's figures depend on besides the code, as written under its heading. */
export interface SectionFacts {
  /** `2026-11-25 10:31–10:33 UTC` (formatSpan). */
  measured: string;
  /** Short commit, and whether the checkout had changes. */
  checkout: string;
  /** Cores, memory, kernel, and the load average as the section began and ended. */
  machine: string;
  /** Node and the real components' versions. */
  software: string;
}

export interface SectionResult {
  name: string;
  title: string;
  facts: SectionFacts;
  rows: BenchRow[];
}

/** The run that writes the file: its header says when, where and which sections. */
export interface RunHeader {
  measured: string;
  machine: string;
  sections: string[];
}

/** A row's cells as the bench prints them (the console table and the Markdown use the same figures). */
export function formatRow(row: BenchRow): { measure: string; value: string; baseline: string; ratio: string; goal: string; result: string } {
  return {
    measure: row.name,
    value: `${row.value.toFixed(1)} ${row.unit}`.trimEnd(),
    baseline: row.baseline === undefined ? '' : `${row.baseline.toFixed(1)} ${row.unit}`.trimEnd(),
    ratio: row.ratio === undefined ? '' : row.ratio.toFixed(2),
    goal: row.goal ?? '',
    result: row.goal === undefined ? '' : row.pass ? 'PASS' : 'FAIL',
  };
}

/** `2026-11-25 10:31–10:33 UTC`, or both dates when the section ran across midnight (UTC). */
export function formatSpan(start: Date, end: Date): string {
  const [startDay, startTime] = start.toISOString().slice(0, 16).split('T') as [string, string];
  const [endDay, endTime] = end.toISOString().slice(0, 16).split('T') as [string, string];
  return startDay === endDay ? `${startDay} ${startTime}–${endTime} UTC` : `${startDay} ${startTime} – ${endDay} ${endTime} UTC`;
}

const begin = (name: string) => `<!-- bench section: ${name} -->`;
const end = (name: string) => `<!-- end of bench section: ${name} -->`;
const beginPrefix = '<!-- bench section: ';
const factLabels: (keyof SectionFacts)[] = ['measured', 'checkout', 'machine', 'software'];

/** A table row; in a cell `|` would end the cell and a line break the row. */
const tableRow = (cells: string[]) =>
  `|${cells.map((text) => (text === '' ? ' ' : ` ${text.replaceAll('\\', '\\\\').replaceAll('|', '\\|').replaceAll('\n', ' ')} `)).join('|')}|`;

/** One section's block, markers included, without a trailing newline. */
export function renderSection(result: SectionResult): string {
  const lines = [begin(result.name), `## ${result.name}`, '', result.title, ''];
  for (const label of factLabels) lines.push(`- ${label}: ${result.facts[label]}`);
  lines.push('');
  if (result.rows.length === 0) lines.push('(the section returned no rows)');
  else {
    lines.push('| measure | value | baseline | ratio | goal | result |', '|---|--:|--:|--:|---|---|');
    for (const row of result.rows) {
      const c = formatRow(row);
      lines.push(tableRow([c.measure, c.value, c.baseline, c.ratio, c.goal, c.result]));
    }
  }
  lines.push(end(result.name));
  return lines.join('\n');
}

/** The section blocks of a file this module wrote, by name, in file order. Text outside blocks, and a block whose end marker is missing, is dropped. */
export function splitSections(text: string): Map<string, string> {
  const blocks = new Map<string, string>();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith(beginPrefix) || !line.endsWith(' -->')) continue;
    const name = line.slice(beginPrefix.length, -' -->'.length);
    const close = lines.indexOf(end(name), i + 1);
    if (close === -1) continue;
    blocks.set(name, lines.slice(i, close + 1).join('\n'));
    i = close;
  }
  return blocks;
}

/** A fact line of a block (`- measured: …`), for the summary. */
function fact(block: string, label: keyof SectionFacts): string {
  const prefix = `- ${label}: `;
  return (
    block
      .split('\n')
      .find((l) => l.startsWith(prefix))
      ?.slice(prefix.length) ?? ''
  );
}

function goalsMet(block: string): string {
  const lines = block.split('\n');
  const passed = lines.filter((l) => l.endsWith('| PASS |')).length;
  const failed = lines.filter((l) => l.endsWith('| FAIL |')).length;
  return passed + failed === 0 ? '' : `${passed} of ${passed + failed}`;
}

/**
 * The whole file: `existing` (the file as it was, or undefined) with the sections of this run replaced, in the
 * order of `order` (run.ts's list); sections the file has that `order` no longer knows stay after them.
 */
export function mergeReport(existing: string | undefined, run: RunHeader, results: SectionResult[], order: string[]): string {
  const blocks = splitSections(existing ?? '');
  for (const result of results) blocks.set(result.name, renderSection(result));
  const names = [...order, ...[...blocks.keys()].filter((name) => !order.includes(name))];
  const summary = names.map((name) => {
    const block = blocks.get(name);
    if (block === undefined) return tableRow([`\`${name}\``, 'not measured yet', '', '']);
    return tableRow([`[${name}](#${name})`, fact(block, 'measured'), fact(block, 'checkout'), goalsMet(block)]);
  });
  const header = [
    '<!-- Generated by `make bench` (test/bench/run.ts): do not edit. Each run rewrites the sections it ran and keeps the others. -->',
    '# Performance figures',
    '',
    `Generated by \`make bench\`, last on ${run.measured}, machine: ${run.machine}; sections run: ${run.sections.map((s) => `\`${s}\``).join(', ')}.`,
    'Do not edit this file: a run of some sections (`make bench ONLY=metadata,listing`) rewrites their tables and keeps',
    'the others, so each section says when, at which checkout and on which machine it was measured.',
    'What the rows measure, the baselines and the goals: [Performance](../performance.md).',
    '',
    '| section | measured | checkout | goals met |',
    '|---|---|---|---|',
    ...summary,
  ];
  return [header.join('\n'), ...names.flatMap((name) => blocks.get(name) ?? [])].join('\n\n') + '\n';
}
