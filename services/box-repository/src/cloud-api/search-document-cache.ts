// The finished JSON text of each box's search result document (documents.ts: boxDocument), per box, API flavour
// and base URL: a search page is then its keyset query plus these fragments joined, instead of every box's versions,
// providers and files read and turned into JSON again on every request (make bench ONLY==scale: ~7 ms of CPU per page
// of 10 boxes, most of it that).
//
// Checked on every use, as the metadata cache's checked layer is (metadata/metadata-cache.ts): the page's query
// reads each box's stamp (search-query.ts: the box row's and its organization's row versions and the box's download
// count) in the same statement that finds the box, and a fragment is used only while its stamp is the one read. A
// change made on any replica of the same database is thus seen by the next search on every replica. What a document
// shows is the same for every caller who may see the box (its released versions only), so it is shared; who may
// see the box is decided per request by the page's query, never by this cache.
// Bounded by entries and bytes: the oldest entries go first (callers may vary the Host header, the base of the URLs).

export interface SearchDocumentCache {
  /** The fragment of `boxId` for this flavour and base (UTF-8), if it was cached with this stamp. */
  get(boxId: number, flavour: string, base: string, stamp: string): Buffer | undefined;
  /** Keeps `json` (as UTF-8) and answers it: a page's answer is its fragments' bytes copied, never encoded again. */
  set(boxId: number, flavour: string, base: string, stamp: string, json: string): Buffer;
  readonly size: number;
  readonly bytes: number;
}

interface Entry {
  stamp: string;
  json: Buffer;
  bytes: number;
}

export function createSearchDocumentCache(
  limits: { maxEntries: number; maxBytes: number } = { maxEntries: 4096, maxBytes: 32 * 1024 * 1024 },
): SearchDocumentCache {
  const entries = new Map<string, Entry>();
  let bytes = 0;
  const remove = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    bytes -= entry.bytes;
  };
  return {
    get(boxId, flavour, base, stamp) {
      const entry = entries.get(`${boxId} ${flavour} ${base}`);
      return entry?.stamp === stamp ? entry.json : undefined;
    },
    set(boxId, flavour, base, stamp, json) {
      const key = `${boxId} ${flavour} ${base}`;
      const utf8 = Buffer.from(json);
      remove(key);
      // A box too big for an eighth of the cache is built per request rather than evicting most others.
      const size = utf8.length + key.length + stamp.length;
      if (size > limits.maxBytes / 8) return utf8;
      entries.set(key, { stamp, json: utf8, bytes: size }); // last in Map order: the newest
      bytes += size;
      for (const oldest of entries.keys()) {
        if (entries.size <= limits.maxEntries && bytes <= limits.maxBytes) break;
        remove(oldest);
      }
      return utf8;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
