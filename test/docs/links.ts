// Relative Markdown links and their anchors, checked the way GitHub renders them. Links are found by scanning
// for `](` with indexOf (no regular expression over the text, so nothing can backtrack), outside fenced code
// blocks and inline code spans; anchors are compared with GitHub's heading slugs.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface Link {
  /** 1-based line of the link in its file. */
  line: number;
  /** The destination as written: `path`, `path#anchor` or `#anchor`. */
  target: string;
}

/** Lines outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trimStart();
    const marker = trimmed.startsWith('```') ? '```' : trimmed.startsWith('~~~') ? '~~~' : undefined;
    if (marker && (fence === undefined || fence === marker)) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ line: index + 1, text: raw });
  });
  return out;
}

/** The line without its inline code spans (a run of n backticks closes at the next run of exactly n). */
export function withoutCodeSpans(line: string): string {
  let out = '';
  let i = 0;
  while (i < line.length) {
    const open = line.indexOf('`', i);
    if (open === -1) {
      out += line.slice(i);
      break;
    }
    out += line.slice(i, open);
    let n = 0;
    while (line[open + n] === '`') n++;
    let search = open + n;
    let close = -1;
    for (;;) {
      const next = line.indexOf('`', search);
      if (next === -1) break;
      let m = 0;
      while (line[next + m] === '`') m++;
      if (m === n) {
        close = next;
        break;
      }
      search = next + m;
    }
    if (close === -1) {
      // An unmatched run is literal text.
      out += line.slice(open, open + n);
      i = open + n;
    } else {
      out += ' ';
      i = close + n;
    }
  }
  return out;
}

/** Every inline link or image destination `[text](dest)` / `[text](dest "title")` outside code. */
export function findLinks(markdown: string): Link[] {
  const links: Link[] = [];
  for (const { line, text: raw } of proseLines(markdown)) {
    const text = withoutCodeSpans(raw);
    let from = 0;
    for (;;) {
      const at = text.indexOf('](', from);
      if (at === -1) break;
      let start = at + 2;
      while (text[start] === ' ') start++;
      let end: number;
      let target: string;
      if (text[start] === '<') {
        end = text.indexOf('>', start + 1);
        if (end === -1) break;
        target = text.slice(start + 1, end);
      } else {
        // The destination runs to the first space or to the ')' that balances its own '('s.
        let depth = 0;
        end = start;
        while (end < text.length) {
          const c = text[end];
          if (c === ' ' || (c === ')' && depth === 0)) break;
          if (c === '(') depth++;
          if (c === ')') depth--;
          end++;
        }
        target = text.slice(start, end);
      }
      if (target) links.push({ line, target });
      from = end + 1;
    }
  }
  return links;
}

/** GitHub's slug of a heading: lower case, punctuation dropped (except `-` and `_`), each space a `-`. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
}

/** A heading's text as rendered: `[text](url)` becomes `text`, emphasis and code markers go with the punctuation. */
function headingText(raw: string): string {
  let out = '';
  let i = 0;
  while (i < raw.length) {
    const open = raw.indexOf('](', i);
    if (open === -1) {
      out += raw.slice(i);
      break;
    }
    out += raw.slice(i, open);
    const close = raw.indexOf(')', open + 2);
    i = close === -1 ? raw.length : close + 1;
  }
  return out.trim();
}

/** The anchors GitHub gives a document's headings (ATX `#` headings outside code), duplicates suffixed -1, -2, …; and explicit `id="…"` / `name="…"` anchors. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const trimmed = text.trimStart();
    if (text.length - trimmed.length > 3) continue;
    let level = 0;
    while (trimmed[level] === '#') level++;
    if (level >= 1 && level <= 6 && (trimmed.length === level || trimmed[level] === ' ')) {
      let content = trimmed.slice(level).trim();
      // A closing sequence of #s is not part of the heading.
      let stripped = content.length;
      while (stripped > 0 && content[stripped - 1] === '#') stripped--;
      if (stripped < content.length && (stripped === 0 || content[stripped - 1] === ' ')) content = content.slice(0, stripped).trim();
      const base = slug(headingText(content));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      out.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const attribute of ['id="', 'name="']) {
      let from = 0;
      for (;;) {
        const at = text.indexOf(attribute, from);
        if (at === -1) break;
        const end = text.indexOf('"', at + attribute.length);
        if (end === -1) break;
        out.add(text.slice(at + attribute.length, end));
        from = end + 1;
      }
    }
  }
  return out;
}

/** A destination with a scheme (`https:`, `mailto:`, …) or protocol-relative: not a file of this repository. */
function isExternal(target: string): boolean {
  if (target.startsWith('//')) return true;
  const colon = target.indexOf(':');
  if (colon <= 0) return false;
  const scheme = target.slice(0, colon);
  for (const c of scheme) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c === '+' || c === '.' || c === '-')) return false;
  }
  return true;
}

/** Every broken relative link of `files` (paths relative to `root`), as `file:line: target: why`. */
export function brokenLinks(root: string, files: string[]): string[] {
  const read = (path: string) => readFileSync(path, 'utf8');
  const problems: string[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (path: string) => {
    let set = anchorCache.get(path);
    if (!set) anchorCache.set(path, (set = anchors(read(path))));
    return set;
  };
  for (const file of files) {
    const absolute = resolve(root, file);
    for (const { line, target } of findLinks(read(absolute))) {
      if (isExternal(target)) continue;
      const hash = target.indexOf('#');
      const pathPart = hash === -1 ? target : target.slice(0, hash);
      const anchor = hash === -1 ? undefined : target.slice(hash + 1);
      const where = `${file}:${line}: ${target}`;
      let decoded: string;
      try {
        decoded = decodeURIComponent(pathPart.split('?')[0]!);
      } catch {
        problems.push(`${where}: not a valid URL path`);
        continue;
      }
      const destination = decoded === '' ? absolute : decoded.startsWith('/') ? join(root, decoded) : resolve(dirname(absolute), decoded);
      if (relative(root, destination).startsWith('..')) {
        problems.push(`${where}: points outside the repository`);
        continue;
      }
      if (!existsSync(destination)) {
        problems.push(`${where}: no such file (${relative(root, destination)})`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (!destination.endsWith('.md') || statSync(destination).isDirectory()) {
        problems.push(`${where}: an anchor into a file that is not Markdown`);
        continue;
      }
      if (!anchorsOf(destination).has(decodeURIComponent(anchor)))
        problems.push(`${where}: no heading with the anchor #${anchor} in ${relative(root, destination)}`);
    }
  }
  return problems;
}
