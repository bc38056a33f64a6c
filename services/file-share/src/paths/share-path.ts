// The one place where request paths and user-given names become share paths. Everything that names an entry
// (URL paths, folderName, newName, upload filenames, key scopes) goes through here, so the rules are the same
// everywhere and a path that passed can be joined and compared as a plain string.
//
// Rules (a violation is a 400 naming the rule):
// - a URL path is split on `/` FIRST and each segment is percent-decoded EXACTLY ONCE; an encoded slash
//   (`%2F`) therefore never splits a name, and a decoded segment containing `/` is refused;
// - after decoding, a name must not contain another %-escape (`%2e`, `%252e` decoded once, `%00`, ...): some
//   client or proxy down the line would decode it a second time and see something else;
// - no `.` or `..` names, no empty segments (`//`), no backslashes, no control characters (C0, DEL, C1,
//   NUL included), no unpaired surrogates;
// - at most 255 bytes (UTF-8) per name and 4096 bytes for the whole path;
// - names are kept exactly as given: no case folding, no trimming and no Unicode normalisation (an NFC and an
//   NFD spelling of "é" are two different names, as on Linux filesystems and S3).
// A NEW name (a folder, an upload, a rename, and each folder an upload creates) must also not display as
// something else (newNameProblem): no bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, ...)
// and no other invisible format characters (zero-width space, BOM, soft hyphen, tags), except
// the zero-width (non-)joiners that Persian, Indic scripts and emoji sequences need; Unicode NFC, so that no two
// names of one folder look alike by normalisation alone; and no word mixing Latin, Greek and Cyrillic letters
// (`pаypal` with a Cyrillic `а`), while words of different scripts side by side stay fine (`Отчёт report`). Names
// already stored are still read, so nothing the rules now refuse becomes unreachable.
import { HttpError } from '@boxyard/kit';

export const MAX_NAME_BYTES = 255;
export const MAX_PATH_BYTES = 4096;

/** Top-level names taken by the service's own routes: an entry with such a name could never be downloaded. */
export const RESERVED_TOP_LEVEL_NAMES: ReadonlySet<string> = new Set(['-', 'api', 'api-docs', 'auth', 'events', 'health', 'metrics', 'openapi.json']);

export interface SharePath {
  /** Decoded names from the root down; empty for the root. */
  segments: string[];
  /** `/` for the root, otherwise `/a/b` (never a trailing slash). */
  path: string;
  /** The request path ended in `/` (the directory form). */
  trailingSlash: boolean;
}

export const invalidPath = (detail: string) => new HttpError(400, 'Invalid path', { errors: [{ pointer: '/path', rule: 'share-path', params: {}, detail }] });

const invalidName = (pointer: string, detail: string) => new HttpError(400, 'Invalid name', { errors: [{ pointer, rule: 'share-name', params: {}, detail }] });

// eslint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/;
const percentEscape = /%[0-9a-f]{2}/i;

/** Why `name` is not acceptable as one entry name, or undefined when it is. */
export function nameProblem(name: string): string | undefined {
  if (name === '') return 'empty names (and empty path segments such as "//") are not allowed';
  if (name === '.' || name === '..') return `"${name}" is not allowed as a name`;
  if (name.includes('/')) return 'a name must not contain "/" (encoded or not)';
  if (name.includes('\\')) return 'backslashes are not allowed';
  if (controlCharacters.test(name)) return 'control characters (NUL included) are not allowed';
  if (!name.isWellFormed()) return 'unpaired UTF-16 surrogates are not allowed';
  if (percentEscape.test(name)) return 'a name must not contain a %-escape after decoding (double encoding)';
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `a name must be at most ${MAX_NAME_BYTES} bytes (UTF-8)`;
  return undefined;
}

// Single character classes and a split on one: linear, no backtracking.
const BIDI_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
// Format characters (Cf), but not ZWNJ/ZWJ (U+200C/U+200D).
const INVISIBLE = /(?![\u200c\u200d])\p{Cf}/u;
const NOT_LETTER = /[^\p{L}\p{M}]+/u;
const CONFUSABLE_SCRIPTS = [/\p{Script=Latin}/u, /\p{Script=Greek}/u, /\p{Script=Cyrillic}/u];

/** Why `name` may not be given to a new entry, beyond nameProblem: it would display as something else. */
export function newNameProblem(name: string): string | undefined {
  if (BIDI_CONTROL.test(name))
    return 'bidirectional control characters (such as U+202E, right-to-left override) are not allowed: they make a name display as another';
  if (INVISIBLE.test(name)) return 'invisible format characters (such as U+200B, zero-width space) are not allowed';
  if (name.normalize('NFC') !== name) return 'a name must be in Unicode NFC (composed) form, e.g. "é" as one character; send the NFC spelling';
  for (const word of name.split(NOT_LETTER)) {
    if (CONFUSABLE_SCRIPTS.filter((script) => script.test(word)).length > 1) {
      return `"${word}" mixes Latin, Greek and Cyrillic letters in one word, which look alike; use one script per word`;
    }
  }
  return undefined;
}

/** Validates a new name sent in a JSON body or a multipart filename; `pointer` names the member in the error. */
export function validateName(name: unknown, pointer: string): string {
  if (typeof name !== 'string') throw invalidName(pointer, 'must be a string');
  const problem = nameProblem(name) ?? newNameProblem(name);
  if (problem) throw invalidName(pointer, problem);
  return name;
}

/** The share path of a request's pathname (the raw, still-encoded part of the URL before `?`). */
export function parseRequestPath(rawPathname: string): SharePath {
  if (!rawPathname.startsWith('/')) throw invalidPath('a path must start with "/"');
  if (rawPathname === '/') return { segments: [], path: '/', trailingSlash: true };
  const trailingSlash = rawPathname.endsWith('/');
  const rawSegments = rawPathname.slice(1, trailingSlash ? -1 : undefined).split('/');
  const segments = rawSegments.map((raw) => {
    let name: string;
    try {
      name = decodeURIComponent(raw);
    } catch {
      throw invalidPath('malformed percent-encoding or invalid UTF-8');
    }
    const problem = nameProblem(name);
    if (problem) throw invalidPath(problem);
    return name;
  });
  const path = `/${segments.join('/')}`;
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw invalidPath(`a path must be at most ${MAX_PATH_BYTES} bytes (UTF-8)`);
  return { segments, path, trailingSlash };
}

/** Validates a share path given in a JSON body (an API key's scope): `/` or `/a/b`, names as above, not encoded. */
export function validateSharePath(value: unknown, pointer: string): string {
  if (typeof value !== 'string' || !value.startsWith('/')) throw invalidName(pointer, 'must be a share path starting with "/"');
  if (value === '/') return value;
  const trimmed = value.endsWith('/') ? value.slice(0, -1) : value;
  for (const name of trimmed.slice(1).split('/')) {
    const problem = nameProblem(name);
    if (problem) throw invalidName(pointer, problem);
  }
  if (Buffer.byteLength(trimmed) > MAX_PATH_BYTES) throw invalidName(pointer, `a path must be at most ${MAX_PATH_BYTES} bytes (UTF-8)`);
  return trimmed;
}

export const joinPath = (directory: string, name: string): string => (directory === '/' ? `/${name}` : `${directory}/${name}`);

export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}

export const baseName = (path: string): string => path.slice(path.lastIndexOf('/') + 1);

/** True when `path` is `scope` itself or inside it (by whole segments: `/ab` is not inside `/a`). */
export const isWithin = (path: string, scope: string): boolean => scope === '/' || path === scope || path.startsWith(`${scope}/`);

/** Throws unless the new path fits within the length limit, its new (last) name passes the rules for new names and its top-level name is not reserved. */
export function checkNewPath(path: string): void {
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw invalidPath(`a path must be at most ${MAX_PATH_BYTES} bytes (UTF-8)`);
  const problem = newNameProblem(baseName(path));
  if (problem) throw invalidPath(problem);
  const top = path.split('/')[1] ?? '';
  if (path.indexOf('/', 1) === -1 && RESERVED_TOP_LEVEL_NAMES.has(top)) {
    throw invalidPath(`"${top}" is reserved at the top level of the share (it is one of the service's routes)`);
  }
}

/** The URL path of an entry: each name percent-encoded, directories with a trailing slash. */
export function encodePath(path: string, isDirectory: boolean): string {
  if (path === '/') return '/';
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  return isDirectory ? `${encoded}/` : encoded;
}

/** A relative link to a child of the listed directory (`name` or `name/`), safe against `:` schemes. */
export function relativeHref(name: string, isDirectory: boolean): string {
  // encodeURIComponent leaves no `:` or `/`, so a name can never read as a scheme or an authority.
  const encoded = encodeURIComponent(name);
  return isDirectory ? `${encoded}/` : encoded;
}
