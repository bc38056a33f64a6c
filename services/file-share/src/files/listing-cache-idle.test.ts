// The cached JSON listings and HTML rows are dropped once nobody has read them for their idle time, so an idle
// process gives that memory back; a listing read more often than that stays cached. The tree is a stand-in that
// counts its reads (what is under test is the cache's lifetime, not PostgreSQL: listing-cache.test.ts covers the
// real listings).
import type { Readable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import type { Entry, Tree } from '../tree/tree-store.ts';
import { createListingCache } from './listing-cache.ts';
import { createHtmlListing } from './listing-html-stream.ts';

const IDLE_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const folder: Entry = { id: 1, parent_id: null, name: '', path: '/', kind: 'dir', size: 0, sha256: null, storage_key: null, mtime: 0, listing_version: '7' };
const file: Entry = {
  id: 2,
  parent_id: 1,
  name: 'a.txt',
  path: '/a.txt',
  kind: 'file',
  size: 1,
  sha256: 'ab'.repeat(32),
  storage_key: 'files/x',
  mtime: 0,
  listing_version: '0',
};

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

it('a JSON listing unread for its idle time is read again; one read within it stays cached', async () => {
  let reads = 0;
  const tree = {
    listJson: () => (reads++, Promise.resolve({ version: '7', path: '/', total: 1, files: '{}', last_kind: null, last_name: null })),
  } as unknown as Tree;
  const cache = createListingCache(tree, 1024 * 1024, IDLE_MS);
  closers.push(() => cache.close());
  const page = { offset: 0, limit: 10 };
  await cache.body(folder, 1, page);
  for (let i = 0; i < 4; i++) {
    await sleep(IDLE_MS / 10);
    await cache.body(folder, 1, page); // read more often than the idle time: kept
  }
  expect(reads).toBe(1);
  await sleep(IDLE_MS * 2.5);
  await cache.body(folder, 1, page);
  expect(reads).toBe(2);
});

it('HTML rows unread for their idle time are read again', async () => {
  let reads = 0;
  const tree = { list: () => (reads++, Promise.resolve({ total: 1, entries: [file] })), listEntries: () => Promise.resolve([]) } as unknown as Pick<
    Tree,
    'list' | 'listEntries'
  >;
  const listings = createHtmlListing(tree, 1024 * 1024, IDLE_MS);
  closers.push(() => listings.close());
  const frame = () => ({ head: '<table>', tail: '</table>' });
  const read = async () => {
    let text = '';
    for await (const chunk of (await listings.page(folder, 1, 100, frame)).stream as Readable) text += String(chunk);
    return text;
  };
  expect(await read()).toContain('data-name="a.txt"');
  expect(await read()).toContain('data-name="a.txt"');
  expect(reads).toBe(1);
  await sleep(IDLE_MS * 2.5);
  expect(await read()).toContain('data-name="a.txt"');
  expect(reads).toBe(2);
});
