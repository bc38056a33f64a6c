// The scale bench's data, written by SQL: through the API, 100,000 versions would take the bench longer than the
// measuring. Each statement inserts the rows the API's writes insert (organization, public box, active version,
// provider, architecture with its file row), with the triggers off while it runs (session_replication_role =
// replica: no per-row metadata_version bump and NOTIFY for boxes nobody has read yet), then one version row per
// touched box is rewritten with the triggers on, so the product's trigger updates the box as the API's last write would. The file rows name
// objects that do not exist: nothing here downloads them.
import type pg from 'pg';

export const CATALOGUE_SQL_NOTE = "built by SQL equal to the API's writes (test/bench/scale-data.ts)";

async function withoutTriggers(db: pg.Client, statements: string[], values: unknown[][]): Promise<void> {
  await db.query('begin');
  try {
    await db.query('set local session_replication_role = replica');
    for (const [index, statement] of statements.entries()) await db.query(statement, values[index]);
    await db.query('commit');
  } catch (error) {
    await db.query('rollback');
    throw error;
  }
}

/** Providers, architectures and files for the versions of `boxIds` that have none yet. */
const providerTree = (providers: string[], architectures: string[]) =>
  [
    `insert into providers (version_id, name)
     select v.id, p.name from versions v, unnest($1::text[]) as p(name)
     where v.box_id = any($2::bigint[]) and not exists (select 1 from providers x where x.version_id = v.id)`,
    `insert into architectures (provider_id, name, default_box)
     select p.id, a.name, a.ord = 1 from providers p join versions v on v.id = p.version_id, unnest($1::text[]) with ordinality as a(name, ord)
     where v.box_id = any($2::bigint[]) and not exists (select 1 from architectures x where x.provider_id = p.id)`,
    `insert into files (architecture_id, file_name, storage_key, size, sha256, checksum_type, checksum)
     select a.id, p.name || '.box', 'scale/' || a.id, 4096, encode(sha256(a.id::text::bytea), 'hex'), 'sha256', encode(sha256(a.id::text::bytea), 'hex')
     from architectures a join providers p on p.id = a.provider_id join versions v on v.id = p.version_id
     where v.box_id = any($1::bigint[]) and not exists (select 1 from files x where x.architecture_id = a.id)`,
  ].map((statement, index) => ({ statement, values: index < 2 ? [index === 0 ? providers : architectures] : [] }));

async function addTrees(db: pg.Client, boxIds: string[], providers: string[], architectures: string[]): Promise<void> {
  const tree = providerTree(providers, architectures);
  await withoutTriggers(
    db,
    tree.map((t) => t.statement),
    tree.map((t) => [...t.values, boxIds]),
  );
  // Statistics first: without them the trigger's cached plans scan whole tables per row (minutes for 10,000 boxes).
  await db.query('analyze');
  // One version per box rewritten with the triggers on: the product's own trigger bumps the box's metadata version
  // and sets what search reads (released), as the API's last write would have.
  await db.query('update versions set status = status where id in (select min(id) from versions where box_id = any($1::bigint[]) group by box_id)', [boxIds]);
}

/** Organizations scale-org<fromOrg…> with `boxes` public boxes of `versions` active versions each. */
export async function addCatalogue(db: pg.Client, size: { fromOrg: number; orgs: number; boxes: number; versions: number }): Promise<void> {
  const last = size.fromOrg + size.orgs - 1;
  const boxIds: string[] = [];
  await withoutTriggers(
    db,
    [
      `insert into organizations (name, is_public) select 'scale-org' || g, true from generate_series($1::int, $2::int) g`,
      `insert into boxes (organization_id, name, description, is_public)
       select o.id, 'box' || b, 'Box ' || b || ' of ' || o.name, true from organizations o, generate_series(1, $3::int) b
       where o.name in (select 'scale-org' || g from generate_series($1::int, $2::int) g)`,
      `insert into versions (box_id, version_number, status)
       select b.id, '1.0.' || v, 'active' from boxes b join organizations o on o.id = b.organization_id, generate_series(1, $3::int) v
       where o.name in (select 'scale-org' || g from generate_series($1::int, $2::int) g)`,
    ],
    [
      [size.fromOrg, last],
      [size.fromOrg, last, size.boxes],
      [size.fromOrg, last, size.versions],
    ],
  );
  const rows = await db.query<{ id: string }>(
    `select b.id from boxes b join organizations o on o.id = b.organization_id where o.name in (select 'scale-org' || g from generate_series($1::int, $2::int) g)`,
    [size.fromOrg, last],
  );
  boxIds.push(...rows.rows.map((r) => r.id));
  await addTrees(db, boxIds, ['virtualbox'], ['amd64']);
  // Every other box has been downloaded 1 to 1,024 times (box_downloads, as serving its file counts them): search
  // by downloads (its default) then walks both its parts, the downloaded boxes and those never downloaded.
  await db.query('insert into box_downloads (box_id, count) select id, 1 + (hashtext(id::text) & 1023) from unnest($1::bigint[]) as id where id % 2 = 0', [
    boxIds,
  ]);
  await db.query('analyze');
}

/** Versions 1.0.<from…to> of `org/box`, each with 2 providers x 2 architectures. */
export async function addWideVersions(db: pg.Client, org: string, box: string, from: number, to: number): Promise<void> {
  const found = await db.query<{ id: string }>('select b.id from boxes b join organizations o on o.id = b.organization_id where o.name = $1 and b.name = $2', [
    org,
    box,
  ]);
  const boxId = found.rows[0]!.id;
  await withoutTriggers(
    db,
    [`insert into versions (box_id, version_number, status) select $1::bigint, '1.0.' || v, 'active' from generate_series($2::int, $3::int) v`],
    [[boxId, from, to]],
  );
  await addTrees(db, [boxId], ['virtualbox', 'libvirt'], ['amd64', 'arm64']);
  await db.query('analyze');
}

/**
 * After a bulk load: vacuum and statistics now, as a catalogue grown over months has had them, instead of
 * autovacuum starting on the new tables while the bench measures (it takes CPU of the same 2 cores), and a
 * checkpoint, so the load's writes are not flushed during the measurement either.
 */
export async function settle(db: pg.Client): Promise<void> {
  await db.query('vacuum analyze');
  await db.query('checkpoint');
}
