// The search's SQL: the boxes a caller may list, matching the query, in the chosen order, one page of them.
//
// The order is walked in an index and the walk stops after the page, instead of every matching box being read and
// sorted (page 1 of 10,000 boxes read them all: make bench ONLY=scale). So each sort is one or two parts, each in
// an index order: `downloads` is the boxes downloaded at least once (box_downloads_count, ties by name), then those
// never downloaded (by organization and box name: organizations_name_key, boxes_name_key); `created` and `updated`
// are the boxes' times (boxes_created_at, boxes_updated_at). Ties are broken by organization and box name
// (lower-cased, unique), so the order is total and a cursor (the last box's key and names) names a place in it.
import { sql } from 'slonik';
import type { CommonQueryMethods, FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { int8 } from '../records.ts';
import type { SearchCursor, SearchOrder, SearchSort } from './search-cursor.ts';

export interface SearchFilter {
  userId: string | null;
  saOrg: number | null;
  admin: boolean;
  /** An ILIKE pattern, or null for every box. */
  pattern: string | null;
  provider: string | null;
}

interface Part {
  /** Which part of the sort this is (the same whatever the cursor). */
  name: string;
  /** Joins after `boxes b`, `organizations o` and the caller's membership `m` are in scope. */
  from: FragmentSqlToken;
  where: FragmentSqlToken;
  /** The sort key as a bigint (the cursor's form), and the column the index orders by. */
  key: FragmentSqlToken;
  order: FragmentSqlToken | null;
}

const names = sql.fragment`(lower(o.name), lower(b.name))`;

/** A timestamp of the cursor (microseconds since the epoch) back as a timestamptz, exactly. */
const timestampOf = (micros: string) => sql.fragment`(timestamptz 'epoch' + ${micros}::bigint * interval '1 microsecond')`;

/** The parts of `sort` in `order`, each with its own condition for the place after `after`; a part wholly before it is left out. */
function parts(sort: SearchSort, order: SearchOrder, after: SearchCursor | undefined): Part[] {
  const desc = order === 'desc';
  const beyond = desc ? sql.fragment`<` : sql.fragment`>`;
  const from = sql.fragment`join organizations o on o.id = b.organization_id`;
  const afterNames = after ? sql.fragment`and lower(o.name) >= ${after.org} and ${names} > (${after.org}::text, ${after.box}::text)` : sql.fragment``;
  // After a key: a smaller one (desc), or the same one and a later name. The first comparison is implied by the
  // second, but only it is an index condition: it starts the walk at the cursor.
  const afterKey = (column: FragmentSqlToken, value: FragmentSqlToken) =>
    after
      ? sql.fragment`and ${column} ${desc ? sql.fragment`<=` : sql.fragment`>=`} ${value}
        and (${column} ${beyond} ${value} or (${column} = ${value} and ${names} > (${after.org}::text, ${after.box}::text)))`
      : sql.fragment``;
  if (sort === 'downloads') {
    const downloaded: Part = {
      name: 'downloaded',
      from: sql.fragment`join box_downloads d on d.box_id = b.id ${from}`,
      where: sql.fragment`d.count > 0 ${after && after.key !== '0' ? afterKey(sql.fragment`d.count`, sql.fragment`${after.key}::bigint`) : sql.fragment``}`,
      key: sql.fragment`d.count`,
      order: sql.fragment`d.count`,
    };
    const never: Part = {
      name: 'never downloaded',
      from,
      where: sql.fragment`not exists (select 1 from box_downloads d where d.box_id = b.id and d.count > 0) ${after?.key === '0' ? afterNames : sql.fragment``}`,
      key: sql.fragment`0::bigint`,
      order: null,
    };
    const inOrder = desc ? [downloaded, never] : [never, downloaded];
    if (!after) return inOrder;
    // The cursor is in the never-downloaded part (key 0) or in the downloaded one: drop what lies before it.
    const cursorPart = after.key === '0' ? never : downloaded;
    return inOrder.slice(inOrder.indexOf(cursorPart));
  }
  const column = sort === 'created' ? sql.fragment`b.created_at` : sql.fragment`b.updated_at`;
  return [
    {
      name: sort,
      from,
      where: sql.fragment`true ${after ? afterKey(column, timestampOf(after.key)) : sql.fragment``}`,
      key: sql.fragment`(extract(epoch from ${column}) * 1000000)::bigint`,
      order: column,
    },
  ];
}

const pageRow = z.object({
  generation: z.string(),
  id: int8.nullable(),
  organization_id: int8.nullable(),
  key: z.string().nullable(),
  org_key: z.string().nullable(),
  box_key: z.string().nullable(),
  stamp: z.string().nullable(),
});
export interface SearchPageKey {
  id: number;
  organization_id: number;
  key: string;
  org_key: string;
  box_key: string;
  stamp: string;
}

export interface SearchRows {
  rows: SearchPageKey[];
  /**
   * The search generation (migration 0012: it moves with every change of what any search lists or its order) all
   * of the rows were read at; null when the parts were read at different ones.
   */
  generation: string | null;
  /** Whether there is a row after the page: the lookahead row read, or a next part known to have rows. */
  more: boolean;
}

/** Which parts of a search have rows, as of a search generation (search-positions.ts). */
export interface PartsWithRows {
  /** The generation `part` was last seen with rows at. */
  seenAt(part: string): string | undefined;
  saw(part: string, generation: string): void;
}

/**
 * `count` rows of the search from row `offset` after `after`: box id, organization id, the key and the names a
 * cursor is made of, and the stamp of its cached document. The parts are read one after the other, each only when
 * the ones before did not give `count` rows. The last of them is a lookahead (is there more?): when only it is
 * missing and the next part is known to have rows at the generation just read, it is not read (a page at the end
 * of one part costs one statement, as any other page).
 */
export async function searchPage(
  db: CommonQueryMethods,
  filter: SearchFilter,
  sort: SearchSort,
  order: SearchOrder,
  page: { count: number; offset: number; after: SearchCursor | undefined; known?: PartsWithRows },
): Promise<SearchRows> {
  const direction = order === 'asc' ? sql.fragment`asc` : sql.fragment`desc`;
  const { userId, saOrg, admin, pattern, provider } = filter;
  // Only the conditions this caller and query need: planning is most of the statement's cost (the walk itself is a
  // tenth of a millisecond), and each join and condition left out is planning saved.
  const mayList = [
    sql.fragment`(o.is_public and b.published and b.is_public)`,
    ...(userId !== null ? [sql.fragment`m.role is not null`] : []),
    ...(saOrg !== null ? [sql.fragment`b.organization_id = ${saOrg}::bigint`] : []),
  ];
  const visible = sql.join(
    [
      sql.fragment`b.released`,
      ...(admin ? [] : [sql.fragment`(${sql.join(mayList, sql.fragment` or `)})`]),
      ...(pattern !== null ? [sql.fragment`(b.name ilike ${pattern} or o.name ilike ${pattern} or b.description ilike ${pattern})`] : []),
      ...(provider !== null
        ? [
            sql.fragment`exists (
      select 1 from versions v join providers p on p.version_id = v.id join architectures a on a.provider_id = p.id join files f on f.architecture_id = a.id
      where v.box_id = b.id and v.status = 'active' and lower(p.name) = lower(${provider}))`,
          ]
        : []),
    ],
    sql.fragment` and `,
  );
  const membership = userId !== null ? sql.fragment`left join memberships m on m.organization_id = o.id and m.user_id = ${userId}::uuid` : sql.fragment``;
  const rowsOf = (part: Part) => sql.fragment`
    from boxes b ${part.from} ${membership}
    where ${visible} and ${part.where}
    order by ${part.order ? sql.fragment`${part.order} ${direction},` : sql.fragment``} lower(o.name), lower(b.name)`;
  const generations = new Set<string>();
  // The generation (one row even when the part has none), the part's rows, then (for them alone, in the same
  // order) the stamp their cached documents are checked with (search-document-cache.ts): any change of the box row
  // (its metadata_version counts its tree, migration 0006) or of its organization's row gives the row a new xmin;
  // download counts are the box's own (box_downloads).
  const read = async (part: Part, want: number, skip: number) => {
    const found = await db.any(sql.type(pageRow)`
      select g.generation, k.id, k.organization_id, k.sort_key::text as key, k.org_key, k.box_key,
        concat_ws('.', k.box_row, k.org_row, (select d.count from box_downloads d where d.box_id = k.id)) as stamp
      from (select sum(value)::text as generation from search_generation) g
      left join lateral (
        select b.id, b.organization_id, ${part.key} as sort_key, lower(o.name) as org_key, lower(b.name) as box_key,
          b.xmin::text as box_row, o.xmin::text as org_row
        ${rowsOf(part)} limit ${want} offset ${skip}) k on true
      order by k.sort_key ${direction}, k.org_key, k.box_key`);
    generations.add(found[0]!.generation);
    return found.flatMap(({ generation: _, ...row }) => (row.id === null ? [] : [row as SearchPageKey]));
  };
  // The parts one after the other, each only when the ones before did not give the rows wanted.
  const rows: SearchPageKey[] = [];
  let want = page.count;
  let skip = page.offset;
  for (const [index, part] of parts(sort, order, page.after).entries()) {
    const fromStart = skip === 0 && (page.after === undefined || index > 0);
    const [generation] = generations;
    if (want === 1 && fromStart && generations.size === 1 && page.known?.seenAt(part.name) === generation) return { rows, generation: generation!, more: true };
    const keys = await read(part, want, skip);
    if (fromStart && keys.length > 0 && generations.size === 1) page.known?.saw(part.name, [...generations][0]!);
    rows.push(...keys);
    want -= keys.length;
    if (want === 0) break;
    // The next part starts where this one ends: skip what of the offset this part did not hold.
    if (skip > 0) {
      skip =
        keys.length > 0
          ? 0
          : skip -
            (await db.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from (select 1 ${rowsOf(part)} limit ${skip}) counted`));
    }
  }
  return { rows, generation: generations.size === 1 ? [...generations][0]! : null, more: rows.length === page.count };
}
