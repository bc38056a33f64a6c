// Rendered fragments kept per key, each valid for one stamp: what the rows it was built from looked like (row
// versions, a tree's metadata_version, names). The caller reads the stamp from the database on every request (in
// the statement it runs anyway), so a change made on any replica of the same database is seen by the next request
// on every replica, and a fragment is never older than the stamp it is used for. The search's per-box documents
// (cloud-api/search-route.ts) and a box page's versions (console/versions-section.ts) are kept this way.
// Bounded by entries and bytes: the oldest entries go first (callers can vary what goes into keys, e.g. the Host).

export interface StampedCache<V> {
  /** The value of `key` if it was kept with this stamp. */
  get(key: string, stamp: string): V | undefined;
  /** Keeps `value` (about `bytes` big) for `stamp`; one too big for an eighth of the cache is not kept. */
  set(key: string, stamp: string, value: V, bytes: number): void;
  readonly size: number;
  readonly bytes: number;
}

interface Entry<V> {
  stamp: string;
  value: V;
  bytes: number;
}

export interface CacheLimits {
  maxEntries: number;
  maxBytes: number;
}

export function createStampedCache<V>(limits: CacheLimits): StampedCache<V> {
  const entries = new Map<string, Entry<V>>();
  let bytes = 0;
  const remove = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    bytes -= entry.bytes;
  };
  return {
    get(key, stamp) {
      const entry = entries.get(key);
      return entry?.stamp === stamp ? entry.value : undefined;
    },
    set(key, stamp, value, valueBytes) {
      remove(key);
      // A value too big for an eighth of the cache is built per request rather than evicting most others.
      const size = valueBytes + key.length + stamp.length;
      if (size > limits.maxBytes / 8) return;
      entries.set(key, { stamp, value, bytes: size }); // last in Map order: the newest
      bytes += size;
      for (const oldest of entries.keys()) {
        if (entries.size <= limits.maxEntries && bytes <= limits.maxBytes) break;
        remove(oldest);
      }
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
