// A stored file's bytes (or a range of them), opened by the local store. Any consumer can read it as a Readable;
// an HTTP download uses `writeTo` instead, which reads into a few buffers that are reused once the socket has taken
// their bytes. Streaming through fresh buffers (fs.ReadStream) allocates one per read, and on 2 cores the garbage
// collection of those buffers cost more than the reads: downloads ran at ~0.5× a static file server.
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Writable } from 'node:stream';
import { markHandled } from '../errors/ignore-error.ts';

/**
 * Two 1 MiB buffers per download: one is read into while the socket takes the other. Measured with curl, 512 MiB
 * (bench `downloads`, 2-3 runs each): against python3 -m http.server 1.26-1.45x (1 stream) and 1.17-1.24x
 * (4 streams), where 4 x 256 KiB made 0.88-1.07x and 0.80-1.02x: fewer, larger socket writes cost the one main
 * thread less per byte. 4 x 1 MiB was no better with 4 streams.
 */
const CHUNK_BYTES = 1024 * 1024;
/** Buffers in flight per download: the read of the next chunk overlaps the socket write of the previous one. */
const DEPTH = 2;

export class FileBody extends Readable {
  /** Bytes read from the file so far (as fs.ReadStream's `bytesRead`); storage metrics count downloads with it. */
  bytesRead = 0;
  private readonly handle: FileHandle;
  private readonly end: number;
  private position: number;
  private writing = false;

  /** `end` is inclusive, as in HTTP ranges; an empty file has end = start - 1. */
  constructor(handle: FileHandle, start: number, end: number) {
    super({ highWaterMark: CHUNK_BYTES });
    this.handle = handle;
    this.position = start;
    this.end = end;
  }

  override _read(): void {
    const wanted = Math.min(CHUNK_BYTES, this.end - this.position + 1);
    if (wanted <= 0) {
      this.push(null);
      return;
    }
    const buffer = Buffer.allocUnsafe(wanted);
    this.handle
      .read(buffer, 0, wanted, this.position)
      .then(({ bytesRead }) => {
        if (bytesRead === 0) throw new Error('the stored file ended before its recorded size');
        this.position += bytesRead;
        this.bytesRead += bytesRead;
        this.push(bytesRead === wanted ? buffer : buffer.subarray(0, bytesRead));
      })
      .catch((error: unknown) => this.destroy(error as Error));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.handle.close().then(
      () => callback(error),
      (closeError: unknown) => callback(error ?? (closeError as Error)),
    );
  }

  /**
   * Writes the remaining bytes to `out` (not ending it) through reused buffers, each refilled only after `out`
   * called back for its write. Rejects when `out` closes first (the client went away). Closes the file either way.
   * Only for a body nothing has read yet.
   */
  async writeTo(out: Writable): Promise<void> {
    if (this.writing || this.readableDidRead || this.destroyed) throw new Error('FileBody.writeTo: the body is already being read');
    this.writing = true;
    let onClose!: () => void;
    const closed = new Promise<never>((_resolve, reject) => {
      onClose = () => reject(new Error('the response closed before the body was written'));
      out.once('close', onClose);
    });
    markHandled(closed); // raced below; never unhandled
    const until = <T>(step: Promise<T>) => Promise.race([step, closed]);
    // No bigger than the body (a small file costs no 2 MiB), and the second only once the first is in flight.
    const bufferBytes = Math.max(1, Math.min(CHUNK_BYTES, this.end - this.position + 1));
    const buffers: Buffer[] = [];
    const inFlight: (Promise<void> | undefined)[] = [];
    try {
      for (let slot = 0; this.position <= this.end; slot = (slot + 1) % DEPTH) {
        await until(inFlight[slot] ?? Promise.resolve());
        const buffer = (buffers[slot] ??= Buffer.allocUnsafeSlow(bufferBytes));
        const wanted = Math.min(bufferBytes, this.end - this.position + 1);
        const { bytesRead } = await until(this.handle.read(buffer, 0, wanted, this.position));
        if (bytesRead === 0) throw new Error('the stored file ended before its recorded size');
        this.position += bytesRead;
        this.bytesRead += bytesRead;
        const chunk = buffer.subarray(0, bytesRead);
        inFlight[slot] = new Promise<void>((resolve, reject) => {
          out.write(chunk, (error) => (error ? reject(error) : resolve()));
        });
        markHandled(inFlight[slot]!); // awaited when its slot comes round or at the end
      }
      await until(Promise.all(inFlight.filter((p) => p !== undefined)));
    } finally {
      out.removeListener('close', onClose);
      this.destroy();
    }
  }
}
