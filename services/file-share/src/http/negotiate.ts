// Content negotiation for directory listings: JSON only when asked for (`?format=json`, or an Accept header
// that prefers application/json over text/html), HTML otherwise — browsers, wget and rclone get links.

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

function parseAccept(header: string): MediaRange[] {
  return header.split(',').flatMap((part) => {
    const [range = '', ...params] = part.trim().split(';');
    const [type, subtype] = range.trim().toLowerCase().split('/');
    if (!type || !subtype) return [];
    let q = 1;
    for (const param of params) {
      const [name, value] = param.trim().split('=');
      if (name?.trim().toLowerCase() === 'q') {
        const parsed = Number(value);
        q = Number.isFinite(parsed) ? Math.min(Math.max(parsed, 0), 1) : 0;
      }
    }
    return [{ type, subtype, q }];
  });
}

/** The q value the header gives `type/subtype`: the most specific matching range wins (RFC 9110 12.5.1). */
function qualityOf(ranges: MediaRange[], type: string, subtype: string): number {
  let best: { specificity: number; q: number } | undefined;
  for (const range of ranges) {
    let specificity: number;
    if (range.type === type && range.subtype === subtype) specificity = 2;
    else if (range.type === type && range.subtype === '*') specificity = 1;
    else if (range.type === '*' && range.subtype === '*') specificity = 0;
    else continue;
    if (!best || specificity > best.specificity) best = { specificity, q: range.q };
  }
  return best?.q ?? 0;
}

export type ListingFormat = 'json' | 'html';

export function listingFormat(format: string | undefined, accept: string | undefined): ListingFormat {
  if (format === 'json' || format === 'html') return format;
  if (!accept) return 'html';
  const ranges = parseAccept(accept);
  return qualityOf(ranges, 'application', 'json') > qualityOf(ranges, 'text', 'html') ? 'json' : 'html';
}

/** A browser (text/html explicitly preferred to JSON): gets redirects after forms and HTML error pages. */
export function wantsHtmlPage(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = parseAccept(accept);
  return qualityOf(ranges, 'text', 'html') > qualityOf(ranges, 'application', 'json');
}
