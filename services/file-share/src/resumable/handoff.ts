// A chunk answered before its commit (s3-parts.ts) holds the upload's lease until S3 has stored its parts and the
// offset is committed; the client's next PATCH usually arrives before that. Waiting for the commit would put S3's
// part completion and a PostgreSQL round trip between every two chunks. Instead, on the replica that holds the
// lease, the next chunk takes it over (the same token) and streams its bytes into the parts that follow while the
// previous commit finishes; its own commit waits for that one. PostgreSQL still decides: the lease is this
// replica's, every commit checks the token and the offset, and a chunk on another replica waits for the commit
// as before (upload-rows.ts lease). A commit that fails fails the chunks that took over after it, so the offset
// stays where the last stored byte is, and the client resumes from HEAD (409 on its next PATCH). At most one
// answered chunk waits for S3 while the next streams: a chunk takes over only once the commit before the one it
// follows has settled, so a slow S3 cannot leave a run of answered but unstored chunks.
import { ignoreError } from '@boxyard/kit';
import type { LeasedRow, UploadRow } from './upload-rows.ts';

/** A chunk answered before its commit, offering its lease to the chunk that starts where it ends. */
export interface Handoff {
  owner: string;
  token: string;
  /** The upload as the next chunk finds it: `received` at this chunk's end, its last part, its hasher. */
  next: LeasedRow;
  /** Settles when this chunk's commit has landed or failed. */
  committed: Promise<UploadRow>;
  /** The commit this chunk's own commit follows (it took the lease over), if any. */
  before: Promise<unknown> | undefined;
  /** Taken by the next chunk: this commit then keeps the lease for it (and does not release it on failure). */
  taken: boolean;
  /** Its commit statement is on its way: too late to take over (the lease is released with it). */
  closed: boolean;
}

export function createHandoffs() {
  const offered = new Map<string, Handoff>();
  const withdraw = (id: string, handoff: Handoff) => {
    if (offered.get(id) === handoff) offered.delete(id);
  };
  return {
    /** Offered until its commit settles (or a chunk takes it). */
    offer(id: string, handoff: Handoff): void {
      offered.set(id, handoff);
      const settled = () => withdraw(id, handoff);
      void handoff.committed.then(settled, settled);
    },

    /**
     * The lease of the chunk answered just before, if this request continues it here (same caller, at its end),
     * once the commit that chunk follows has settled; undefined sends the request to PostgreSQL's lease.
     */
    async take(id: string, owner: string, offset: number): Promise<Handoff | undefined> {
      const matches = (handoff: Handoff | undefined): handoff is Handoff =>
        handoff !== undefined && !handoff.taken && !handoff.closed && handoff.owner === owner && handoff.next.received === offset;
      const handoff = offered.get(id);
      if (!matches(handoff)) return undefined;
      await handoff.before?.catch(ignoreError('its failure fails the chunk that follows it, which settles first'));
      if (offered.get(id) !== handoff || !matches(handoff)) return undefined; // its commit settled meanwhile, or another request took it
      handoff.taken = true;
      offered.delete(id);
      return handoff;
    },
  };
}

export type Handoffs = ReturnType<typeof createHandoffs>;
