// Where each page of a search starts, as a keyset cursor: `page=500` asked for directly then costs what its next
// link costs (a walk from the cursor), not the walk over the 4,990 rows before it (OFFSET; make bench ONLY==scale:
// 12 ms of PostgreSQL per request against 1 ms).
//
// A position holds while nothing that any search lists, or its order, has changed: it is stored with the search
// generation (migration 0012: statement triggers on boxes, organizations, box_downloads and memberships move it)
// read in the same snapshot as the rows it was found with, and used only when the page read from it comes with
// that same generation, so a change committed on any replica is seen by the next request. A position decides
// where a page starts, never what a caller may see: the page's rows are read with the caller's visibility. Per
// caller (who may see what), query, sort, order, page size and page; bounded, the oldest going first.
import type { SearchCursor } from './search-cursor.ts';
import type { PartsWithRows } from './search-query.ts';

export interface SearchPosition {
  /** The last row before the page. */
  cursor: SearchCursor;
  generation: string;
}

export interface SearchPositions {
  get(key: string): SearchPosition | undefined;
  set(key: string, position: SearchPosition): void;
  /** Which parts of the search `key` (positionKey without a page) were seen with rows, at which generation. */
  partsWithRows(key: string): PartsWithRows;
  readonly size: number;
}

/** The key of a page's position: everything the rows before it depend on (without limit and page: of the search). */
export const positionKey = (search: {
  caller: string;
  pattern: string | null;
  provider: string | null;
  sort: string;
  order: string;
  limit?: number;
  page?: number;
}): string => JSON.stringify([search.caller, search.pattern, search.provider, search.sort, search.order, search.limit ?? null, search.page ?? null]);

function bounded<V>(maxEntries: number) {
  const entries = new Map<string, V>();
  return {
    get: (key: string) => entries.get(key),
    set(key: string, value: V) {
      entries.delete(key); // re-inserted last: Map order is insertion order
      entries.set(key, value);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
    },
    get size() {
      return entries.size;
    },
  };
}

export function createSearchPositions(maxEntries = 4096): SearchPositions {
  const positions = bounded<SearchPosition>(maxEntries);
  const withRows = bounded<string>(maxEntries);
  return {
    get: positions.get,
    set: positions.set,
    partsWithRows: (key) => ({
      seenAt: (part) => withRows.get(`${key} ${part}`),
      saw: (part, generation) => withRows.set(`${key} ${part}`, generation),
    }),
    get size() {
      return positions.size + withRows.size;
    },
  };
}
