// Two layers over the serialized Vagrant metadata document (JSON text with its strong ETag), per box and host:
//  - checked: valid while the box's `metadata_version` (bumped by triggers on everything the document lists,
//    migration 0006) and the names in the document stay the same; the caller reads the version (with its
//    read check) on every request, so a change made on any replica is seen at once;
//  - trusted: for anonymous reads, the organization and box rows with the document, used without asking the
//    database while this replica LISTENs on `boxyard_metadata:<schema>` (the triggers NOTIFY every change of a
//    box or organization row, the version bump included). Other replicas' changes arrive with the notification
//    (milliseconds); this replica's own writes clear it before their answer is sent (app.ts), and a lost LISTEN
//    connection clears it and turns it off until it is back.
// Both are bounded: the oldest entries go first when full (callers can vary the Host header at will).
import { createHash } from 'node:crypto';
import type { Box, Organization } from '../records.ts';

export interface CachedDocument {
  /** The document's inputs that are not in the rows the version counts: names, description, base URL. */
  key: string;
  version: number;
  /** UTF-8 bytes, encoded once: a string would be encoded again on every response. */
  body: Buffer;
  etag: string;
}

export interface TrustedEntry {
  org: Organization;
  box: Box;
  document: CachedDocument;
}

export interface MetadataCache {
  get(boxId: number, base: string, key: string, version: number): CachedDocument | undefined;
  set(boxId: number, base: string, key: string, version: number, body: string): CachedDocument;
  /** The trusted entry for an anonymous read of `org/box` on `base`; undefined unless listening. */
  trusted(orgName: string, boxName: string, base: string): TrustedEntry | undefined;
  /** Counts invalidations: read it before the database, pass it to `trust`, so a change in between wins. */
  readonly generation: number;
  trust(orgName: string, boxName: string, base: string, entry: TrustedEntry, generation: number): void;
  /** A notification's payload: `box:<id>` or `org:<id>`. */
  invalidate(payload: string): void;
  /** Drops every trusted entry; `listening` false keeps the trusted layer off until set again. */
  clearTrusted(): void;
  listening: boolean;
  readonly size: number;
}

function bounded<V>(maxEntries: number) {
  const entries = new Map<string, V>();
  return {
    entries,
    put(id: string, value: V) {
      entries.delete(id); // re-inserted last: Map order is insertion order
      entries.set(id, value);
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
    },
  };
}

export function createMetadataCache(maxEntries = 2000): MetadataCache {
  const checked = bounded<CachedDocument>(maxEntries);
  const trusted = bounded<TrustedEntry>(maxEntries);
  let generation = 0;
  let listening = false;
  const trustedId = (orgName: string, boxName: string, base: string) => `${orgName.toLowerCase()}/${boxName.toLowerCase()} ${base}`;
  return {
    get(boxId, base, key, version) {
      const entry = checked.entries.get(`${boxId} ${base}`);
      return entry && entry.version === version && entry.key === key ? entry : undefined;
    },
    set(boxId, base, key, version, body) {
      const bytes = Buffer.from(body);
      const entry = { key, version, body: bytes, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 32)}"` };
      checked.put(`${boxId} ${base}`, entry);
      return entry;
    },
    trusted(orgName, boxName, base) {
      return listening ? trusted.entries.get(trustedId(orgName, boxName, base)) : undefined;
    },
    get generation() {
      return generation;
    },
    trust(orgName, boxName, base, entry, seen) {
      if (listening && seen === generation) trusted.put(trustedId(orgName, boxName, base), entry);
    },
    invalidate(payload) {
      generation++;
      const [kind, id] = payload.split(':');
      const target = Number(id);
      for (const [key, entry] of trusted.entries) {
        if ((kind === 'org' && entry.org.id === target) || (kind === 'box' && entry.box.id === target) || !Number.isSafeInteger(target))
          trusted.entries.delete(key);
      }
    },
    clearTrusted() {
      generation++;
      trusted.entries.clear();
    },
    get listening() {
      return listening;
    },
    set listening(value: boolean) {
      listening = value;
      if (!value) this.clearTrusted();
    },
    get size() {
      return checked.entries.size + trusted.entries.size;
    },
  };
}
