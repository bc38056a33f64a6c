// The search's keyset cursor: where the previous page ended (its last box's sort key, organization and box name,
// lower-cased as they are compared) and which sort it belongs to. Opaque to clients: base64url of a JSON array.
export type SearchSort = 'downloads' | 'created' | 'updated';
export type SearchOrder = 'desc' | 'asc';

export interface SearchCursor {
  sort: SearchSort;
  order: SearchOrder;
  /** A bigint as decimal text: downloads, or the timestamp in microseconds since the epoch. */
  key: string;
  org: string;
  box: string;
}

/** Decimal text of a signed 64-bit integer (bounded by length, then by value). */
const isInt8 = (text: string) => /^-?\d{1,19}$/.test(text) && BigInt(text) >= -(2n ** 63n) && BigInt(text) < 2n ** 63n;

export const encodeSearchCursor = (cursor: SearchCursor): string =>
  Buffer.from(JSON.stringify([cursor.sort, cursor.order, cursor.key, cursor.org, cursor.box])).toString('base64url');

/** The cursor `text` encodes, if it is one of a search with this sort and order; null for anything else. */
export function decodeSearchCursor(text: string, sort: SearchSort, order: SearchOrder): SearchCursor | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 5 || !parsed.every((item) => typeof item === 'string' && item.length <= 300)) return null;
  const [cursorSort, cursorOrder, key, org, box] = parsed as string[];
  if (cursorSort !== sort || cursorOrder !== order || !isInt8(key!) || (sort === 'downloads' && key!.startsWith('-')) || !org || !box) return null;
  return { sort, order, key: key!, org, box };
}
