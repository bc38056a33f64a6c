// asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/): a JSON header line, then one `[time, code,
// data]` line per event, times in seconds since the start. Written as it happens, so a cut-off file is still a
// valid recording of what came before the cut. Also: the visible text of output (for the search index) and where
// in a chunk a word first shows.

export interface CastHeader {
  width: number;
  height: number;
  /** Unix seconds of the start. */
  timestamp: number;
  title: string;
  shell: string | null;
}

export const CAST_MEDIA_TYPE = 'application/x-asciicast';

export function headerLine(header: CastHeader): string {
  const env: Record<string, string> = { TERM: 'xterm-256color' };
  if (header.shell) env.SHELL = header.shell;
  return `${JSON.stringify({ version: 2, width: header.width, height: header.height, timestamp: header.timestamp, title: header.title, env })}\n`;
}

export type EventCode = 'o' | 'i' | 'r' | 'm';

/** One event line; the time in microseconds' precision, as asciinema writes it. */
export const eventLine = (seconds: number, code: EventCode, data: string): string => `${JSON.stringify([Math.round(seconds * 1e6) / 1e6, code, data])}\n`;

/**
 * What a terminal shows of `text`, roughly: escape sequences (CSI, OSC, two-byte ESC x) and control characters
 * dropped, line ends kept. One pass, no regular expression: output is untrusted and can be large.
 */
export function visibleText(text: string): string {
  let out = '';
  // Runs of characters kept as they are go over in one slice (a per-character append made a flood's index slow).
  let run = 0;
  let i = 0;
  const cut = (to: number) => {
    if (to > run) out += text.slice(run, to);
  };
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x1b) {
      cut(i);
      const next = text[i + 1];
      if (next === '[') {
        i += 2;
        // Parameters and intermediates, up to the final byte (0x40-0x7e).
        while (i < text.length && !(text.charCodeAt(i) >= 0x40 && text.charCodeAt(i) <= 0x7e)) i++;
        i++;
      } else if (next === ']' || next === 'P' || next === '_' || next === '^') {
        // Strings end with BEL or ESC \.
        i += 2;
        while (i < text.length && text.charCodeAt(i) !== 0x07 && !(text.charCodeAt(i) === 0x1b && text[i + 1] === '\\')) i++;
        i += text.charCodeAt(i) === 0x07 ? 1 : 2;
      } else {
        i += next === '(' || next === ')' || next === '#' ? 3 : 2;
      }
      run = Math.min(i, text.length);
      continue;
    }
    if (c === 0x0a || (c >= 0x20 && c !== 0x7f)) {
      i++;
      continue;
    }
    cut(i);
    if (c === 0x09) out += ' ';
    i++;
    run = i;
  }
  cut(text.length);
  return out;
}

/** A search term: one word of letters, digits, `_`, `-` or `.`, 2 to 64 characters (no wildcards: see search). */
export const SEARCH_TERM = /^[\p{L}\p{N}_.-]{2,64}$/u;

/**
 * The time of the first output event in `chunk` (event lines) at which `word` (lower case) has shown, looking at
 * each event together with the one before (a word may arrive split over two reads); undefined when it doesn't.
 */
export function firstTimeOf(chunk: string, word: string): number | undefined {
  let previous = '';
  for (const line of chunk.split('\n')) {
    if (!line) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (!Array.isArray(event) || event[1] !== 'o' || typeof event[0] !== 'number' || typeof event[2] !== 'string') continue;
    const text = visibleText(event[2]).toLowerCase();
    if ((previous + text).includes(word)) return event[0];
    previous = text.slice(-64);
  }
  return undefined;
}
