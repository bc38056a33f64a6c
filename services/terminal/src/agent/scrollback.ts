// The last N bytes of a session's output, replayed to every socket that attaches. Bounded: old output is
// dropped as new output arrives, never buffered without limit.

export class Scrollback {
  readonly capacity: number;
  #chunks: Buffer[] = [];
  #head = 0;
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

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#total += chunk.length;
    // A chunk larger than the whole ring: keep its tail only.
    const data = chunk.length > this.capacity ? chunk.subarray(chunk.length - this.capacity) : chunk;
    this.#chunks.push(data);
    this.#size += data.length;
    while (this.#size > this.capacity) {
      const first = this.#chunks[this.#head]!;
      const excess = this.#size - this.capacity;
      if (first.length <= excess) {
        this.#head++;
        this.#size -= first.length;
      } else {
        this.#chunks[this.#head] = first.subarray(excess);
        this.#size -= excess;
      }
    }
    // Compact the dropped slots now and then, so the array doesn't grow with the session's lifetime.
    if (this.#head > 1024 && this.#head * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The kept output; when old output was dropped, starting on a character boundary (never mid UTF-8 sequence). */
  snapshot(): Buffer {
    const all = Buffer.concat(this.#chunks.slice(this.#head), this.#size);
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
    const all = Buffer.concat(this.#chunks.slice(this.#head), this.#size);
    if (from >= this.#total) return { data: Buffer.alloc(0), gap: from > this.#total };
    if (from < oldest) return { data: all, gap: true };
    return { data: all.subarray(from - oldest), gap: false };
  }
}
