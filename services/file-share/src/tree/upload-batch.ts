// Upload commits in groups. Every commit takes the tree lock (tree-store.ts says why) and holds it until its COMMIT
// is on disk, so commits ran strictly one after another, each paying its round trips and its own WAL flush while
// every other upload queued behind it: 10,000 uploads of 10 KiB at 8 clients ran at ~120 files/s whatever the
// CPU. Now the commits that arrive while one is in flight go together in the next transaction: one lock, one
// flush, and the common case (a new file in an existing folder) as one statement for all of them.
//
// Each upload stays atomic and independent: its row, its bytes leaving the garbage list and its event are in the
// same transaction, and one upload's refusal (a folder in the way, replacing without `delete`) is its own answer,
// the others commit. Events keep their order: one transaction under the lock, ids in insertion order.
import { HttpError } from '@boxyard/kit';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { createBatcher, outcomeOf, type Outcome } from '../db/batcher.ts';
import { checkNewPath, parentOf } from '../paths/share-path.ts';
import { entryColumns, entryRow, type Entry, type TreeDatabase } from './entry-rows.ts';
import { commitLocked, commitUpload, lockTree, type UploadCommit, type UploadResult } from './tree-changes.ts';

/** Uploads per transaction at most: the statement's arrays stay small, the lock's turn short. */
const MAX_BATCH = 100;

/** New files whose folder exists, in one statement: rows, garbage entries, events and one NOTIFY for them all. */
function insertFiles(db: TreeDatabase, tx: DatabaseTransactionConnection, files: { input: UploadCommit; parent: Entry }[]): Promise<readonly Entry[]> {
  // One array parameter per column, unnested together below.
  const column = (pick: (file: { input: UploadCommit; parent: Entry }) => string | number | null, type: string) => sql.array(files.map(pick), type);
  return tx.any(sql.type(entryRow)`
    with input as (
      select * from unnest(
        ${column((f) => f.parent.id, 'int8')},
        ${column((f) => f.input.path.slice(f.input.path.lastIndexOf('/') + 1), 'text')},
        ${column((f) => f.input.path, 'text')},
        ${column((f) => f.input.size, 'int8')},
        ${column((f) => f.input.sha256, 'text')},
        ${column((f) => f.input.storageKey, 'text')},
        ${column((f) => f.input.userId, 'uuid')}
      ) with ordinality as u(parent_id, name, path, size, sha256, storage_key, created_by, n)
    ), inserted as (
      insert into entries (parent_id, name, path, kind, size, sha256, storage_key, created_by)
      select parent_id, name, path, 'file', size, sha256, storage_key, created_by from input order by n
      returning ${entryColumns}
    ), referenced as (
      delete from object_garbage where storage_key in (select storage_key from input)
    ), event as (
      insert into events (name, paths, data)
      select 'checksum-update', array[i.path], jsonb_build_object('filePath', i.path, 'checksum', i.sha256, 'size', i.size,
        'mtime', to_char(i.mtime at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      from inserted i order by i.id
      returning id
    )
    select i.*, n.notified from inserted i cross join (select pg_notify(${db.eventChannel}, max(id)::text) as notified from event) n`);
}

/** Whether `input` can go into the one statement: its folder exists, its path is free and new in this batch. */
function plainNewFile(input: UploadCommit, byPath: Map<string, Entry>, taken: Set<string>): Entry | undefined {
  const parent = byPath.get(parentOf(input.path));
  if (parent?.kind !== 'dir' || byPath.has(input.path) || taken.has(input.path)) return undefined;
  try {
    checkNewPath(input.path);
  } catch {
    return undefined; // refused by commitLocked, with its own error
  }
  return parent;
}

/** One transaction for `inputs`; `rolledBack` is set when it failed before its COMMIT (nothing was written). */
async function commitTogether(db: TreeDatabase, inputs: readonly UploadCommit[], state: { rolledBack: boolean }): Promise<Outcome<UploadResult>[]> {
  return db.pool.transaction(async (tx) => {
    try {
      await lockTree(tx);
      const paths = [...new Set(inputs.flatMap((input) => [input.path, parentOf(input.path)]))];
      const found = await tx.any(sql.type(entryRow)`select ${entryColumns} from entries where path = any(${sql.array(paths, 'text')})`);
      const byPath = new Map(found.map((entry) => [entry.path, entry]));
      const taken = new Set<string>();
      const plain: { index: number; input: UploadCommit; parent: Entry }[] = [];
      const rest: number[] = [];
      inputs.forEach((input, index) => {
        const parent = plainNewFile(input, byPath, taken);
        if (parent) {
          taken.add(input.path);
          plain.push({ index, input, parent });
        } else rest.push(index);
      });
      const outcomes: Outcome<UploadResult>[] = [];
      if (plain.length > 0) {
        const inserted = new Map((await insertFiles(db, tx, plain)).map((entry) => [entry.path, entry]));
        for (const { index, input } of plain) {
          const entry = inserted.get(input.path);
          outcomes[index] = entry
            ? { ok: true, value: { entry, created: true, replacedKey: null } }
            : { ok: false, error: new Error(`${input.path} was not inserted`) };
        }
      }
      // The rest one by one, each in a savepoint: a refusal undoes only its own part (folders it made). Anything
      // but a refusal fails the transaction here, before its COMMIT (then each upload is tried on its own).
      for (const index of rest) {
        const outcome = await outcomeOf(tx.transaction((savepoint) => commitLocked(db, savepoint, inputs[index]!)));
        if (!outcome.ok && !(outcome.error instanceof HttpError)) throw outcome.error;
        outcomes[index] = outcome;
      }
      return outcomes;
    } catch (error) {
      state.rolledBack = true;
      throw error;
    }
  });
}

/**
 * A batch of commits. Alone, a commit runs as before (commitUpload). When the shared transaction fails before its
 * COMMIT, nothing of it was written: each upload is then tried on its own, so one that breaks the statement does
 * not fail the others. A failing COMMIT leaves the outcome unknown and fails them all, as it failed one before.
 */
async function commitBatch(db: TreeDatabase, inputs: readonly UploadCommit[]): Promise<Outcome<UploadResult>[]> {
  if (inputs.length === 1) return [await outcomeOf(commitUpload(db, inputs[0]!))];
  const state = { rolledBack: false };
  try {
    return await commitTogether(db, inputs, state);
  } catch (error) {
    if (!state.rolledBack) throw error;
    return Promise.all(inputs.map((input) => outcomeOf(commitUpload(db, input))));
  }
}

/** commitUpload, grouped with the commits that arrive while another is in flight. */
export function createUploadCommitter(db: TreeDatabase): (input: UploadCommit) => Promise<UploadResult> {
  return createBatcher<UploadCommit, UploadResult>({ maxItems: MAX_BATCH, run: (inputs) => commitBatch(db, inputs) });
}
