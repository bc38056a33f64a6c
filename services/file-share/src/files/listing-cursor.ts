// The `next` cursor of a JSON folder listing: the last entry of a page as an opaque, URL-safe token (base64url of
// `d:` or `f:` and the name). The next page starts after that position in the listing order, read from the listing
// index (keyset), so every page of a 100,000-entry folder costs the same and no entry is skipped or repeated when
// entries are added or removed between pages.
import { badRequest } from '@boxyard/kit';
import type { ListingPosition } from '../tree/tree-store.ts';

/** A name is at most 255 bytes; base64 of 2 + 255 bytes stays well under this. */
export const MAX_CURSOR_LENGTH = 512;

export const encodeCursor = (position: ListingPosition): string =>
  Buffer.from(`${position.kind === 'dir' ? 'd' : 'f'}:${position.name}`, 'utf8').toString('base64url');

export function decodeCursor(cursor: string): ListingPosition {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const kind = text.startsWith('d:') ? 'dir' : text.startsWith('f:') ? 'file' : undefined;
  const name = text.slice(2);
  // Round-trips exactly, or it is not one of ours (hand-made, truncated, not UTF-8); no NUL, which PostgreSQL refuses.
  if (!kind || !name || name.includes('/') || name.includes('\0') || encodeCursor({ kind, name }) !== cursor)
    throw badRequest('Invalid cursor: `after` takes the `next` value of a listing');
  return { kind, name };
}
