// SCALE_SHARE_PROFILE=<dir> (exploring, not for the report): around the product's small-files load, records where
// its PostgreSQL's time goes and what it wrote. With SCALE_SHARE_PERF=1 `perf record` of the whole machine (filter by the postgres pids in
// <dir>/pids.json: `perf report -i <dir>/perf.data --pid ...`), the database's counters before and after (commits,
// WAL records, bytes and flushes, tuples and index scans per table and index) as a difference in <dir>/stats.json, and
// the load's window on the monotonic clock (microseconds, the clock of a `node --cpu-prof` profile's samples: start
// the product with BENCH_NODE_FLAGS="... --cpu-prof --cpu-prof-dir=<dir>" and cut its profile to the window).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';

const STATS = `
  select 'db' as kind, datname as name, json_build_object('xact_commit', xact_commit, 'xact_rollback', xact_rollback, 'tup_inserted', tup_inserted,
    'tup_updated', tup_updated, 'tup_deleted', tup_deleted, 'tup_fetched', tup_fetched, 'blks_hit', blks_hit, 'blks_read', blks_read) as v
  from pg_stat_database where datname = current_database()
  union all
  select 'wal', 'wal', to_json(w) from pg_stat_wal w
  union all
  select 'table', relname, json_build_object('seq_scan', seq_scan, 'idx_scan', idx_scan, 'n_tup_ins', n_tup_ins, 'n_tup_upd', n_tup_upd,
    'n_tup_hot_upd', n_tup_hot_upd, 'n_tup_del', n_tup_del)
  from pg_stat_user_tables where schemaname = 'file_share'
  union all
  select 'index', indexrelname, json_build_object('idx_scan', idx_scan, 'idx_tup_read', idx_tup_read) from pg_stat_user_indexes where schemaname = 'file_share'`;

type Snapshot = Record<string, Record<string, unknown>>;

async function snapshot(db: pg.Client): Promise<Snapshot> {
  await db.query('select pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ kind: string; name: string; v: Record<string, unknown> }>(STATS);
  return Object.fromEntries(rows.map((r) => [`${r.kind}:${r.name}`, r.v]));
}

function difference(before: Snapshot, after: Snapshot, files: number): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [key, values] of Object.entries(after)) {
    const changed: Record<string, number> = {};
    for (const [field, value] of Object.entries(values)) {
      const was = Number(before[key]?.[field] ?? 0);
      if (typeof value === 'number' || /^\d+$/.test(String(value))) {
        const delta = Number(value) - was;
        if (delta !== 0) changed[`${field} per file`] = Math.round((delta / files) * 1000) / 1000;
      }
    }
    if (Object.keys(changed).length > 0) out[key] = changed;
  }
  return out;
}

export interface LoadProfile {
  stop(files: number): Promise<void>;
}

/** Starts recording when SCALE_SHARE_PROFILE is set; otherwise does nothing. */
export async function profileLoad(db: pg.Client, postgresPids: () => Promise<number[]>): Promise<LoadProfile> {
  const dir = process.env.SCALE_SHARE_PROFILE;
  if (!dir) return { stop: async () => {} };
  await mkdir(dir, { recursive: true });
  const before = await snapshot(db);
  // perf only when asked (SCALE_SHARE_PERF=1): its sampling of the whole machine costs CPU the figures would miss.
  const perf: ChildProcess | undefined = process.env.SCALE_SHARE_PERF
    ? spawn('perf', ['record', '-a', '-g', '-F', '997', '-o', join(dir, 'perf.data')], { stdio: 'ignore' })
    : undefined;
  if (perf) await new Promise((resolve) => setTimeout(resolve, 500));
  const start = process.hrtime.bigint() / 1000n;
  return {
    async stop(files) {
      const end = process.hrtime.bigint() / 1000n;
      const pids = await postgresPids();
      if (perf) {
        perf.kill('SIGINT');
        await once(perf, 'exit');
      }
      const after = await snapshot(db);
      await writeFile(join(dir, 'window.json'), JSON.stringify({ startUs: Number(start), endUs: Number(end) }));
      await writeFile(join(dir, 'pids.json'), JSON.stringify(pids));
      await writeFile(join(dir, 'stats.json'), JSON.stringify(difference(before, after, files), null, 1));
    },
  };
}
