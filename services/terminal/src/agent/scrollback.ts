// The last N bytes of a session's output, replayed to every socket that attaches. Bounded: old output is
// overwritten as new output arrives, never buffered without limit. One ring of `capacity` bytes, allocated at the
// first output: each read is copied in (the pty's reads land in a buffer that is reused: pty-output.ts), so a
// flood leaves no Buffer per read behind for the garbage collector; pages of the ring not yet written take no memory.

export class Scrollback {
  readonly capacity: number;
  #ring: Buffer | undefined;
  /** Where the next byte goes in the ring. */
  #end = 0;
  #size = 0;
  /** Bytes pushed since the session began: the offset a recording resumes from. */
  #total = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity <= 0) throw new Error('scrollback capacity must be a positive integer');
    this.capacity = capacity;
  }

  get size(): number {
    return this.#size;
  }

  /** The absolute offset of the next byte pushed (all output so far, kept or dropped). */
  get total(): number {
    return this.#total;
  }

  /** Keeps the first `length` bytes of `data` (copied: `data` may be reused once this returns). */
  push(data: Buffer, length = data.length): void {
    if (length === 0) return;
    this.#total += length;
    const ring = (this.#ring ??= Buffer.allocUnsafeSlow(this.capacity));
    // A chunk larger than the whole ring: keep its tail only.
    const start = length > this.capacity ? length - this.capacity : 0;
    let copied = start;
    while (copied < length) {
      const n = data.copy(ring, this.#end, copied, Math.min(length, copied + this.capacity - this.#end));
      copied += n;
      this.#end = (this.#end + n) % this.capacity;
    }
    this.#size = Math.min(this.capacity, this.#size + length - start);
  }

  /** The kept output, oldest first (a copy). */
  #kept(): Buffer {
    if (!this.#ring || this.#size === 0) return Buffer.alloc(0);
    const begin = (this.#end - this.#size + this.capacity) % this.capacity;
    if (begin < this.#end) return Buffer.from(this.#ring.subarray(begin, this.#end));
    return Buffer.concat([this.#ring.subarray(begin), this.#ring.subarray(0, this.#end)], this.#size);
  }

  /** The kept output; when old output was dropped, starting on a character boundary (never mid UTF-8 sequence). */
  snapshot(): Buffer {
    const all = this.#kept();
    let start = 0;
    // UTF-8 continuation bytes (10xxxxxx) can't start a character: skip at most three of them.
    while (start < Math.min(3, all.length) && (all[start]! & 0xc0) === 0x80) start++;
    return start === 0 ? all : all.subarray(start);
  }

  /**
   * The kept output from absolute offset `from` on (a recording resuming where it stopped): `gap` when part of it
   * was dropped already; raw bytes, so a resumed recording doubles nothing.
   */
  since(from: number): { data: Buffer; gap: boolean } {
    const oldest = this.#total - this.#size;
    if (from >= this.#total) return { data: Buffer.alloc(0), gap: from > this.#total };
    const all = this.#kept();
    if (from < oldest) return { data: all, gap: true };
    return { data: all.subarray(from - oldest), gap: false };
  }
}
