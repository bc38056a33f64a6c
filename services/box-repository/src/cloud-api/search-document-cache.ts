// The finished JSON text of each box's search result document (documents.ts: boxDocument), per box, API flavour
// and base URL: a search page is then its keyset query plus these fragments joined, instead of every box's versions,
// providers and files read and turned into JSON again on every request (make bench ONLY==scale: ~7 ms of CPU per page
// of 10 boxes, most of it that).
//
// The stamp (caching/stamped-cache.ts) is read by the page's query (search-query.ts: the box row's and its
// organization's row versions and the box's download count) in the same statement that finds the box. What a
// document shows is the same for every caller who may see the box (its released versions only), so it is shared;
// who may see the box is decided per request by the page's query, never by this cache.
import { createStampedCache, type CacheLimits } from '../caching/stamped-cache.ts';

export interface SearchDocumentCache {
  /** The fragment of `boxId` for this flavour and base (UTF-8), if it was cached with this stamp. */
  get(boxId: number, flavour: string, base: string, stamp: string): Buffer | undefined;
  /** Keeps `json` (as UTF-8) and answers it: a page's answer is its fragments' bytes copied, never encoded again. */
  set(boxId: number, flavour: string, base: string, stamp: string, json: string): Buffer;
  readonly size: number;
  readonly bytes: number;
}

export function createSearchDocumentCache(limits: CacheLimits = { maxEntries: 4096, maxBytes: 32 * 1024 * 1024 }): SearchDocumentCache {
  const cache = createStampedCache<Buffer>(limits);
  return {
    get: (boxId, flavour, base, stamp) => cache.get(`${boxId} ${flavour} ${base}`, stamp),
    set(boxId, flavour, base, stamp, json) {
      const utf8 = Buffer.from(json);
      cache.set(`${boxId} ${flavour} ${base}`, stamp, utf8, utf8.length);
      return utf8;
    },
    get size() {
      return cache.size;
    },
    get bytes() {
      return cache.bytes;
    },
  };
}
