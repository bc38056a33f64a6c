// Checks, while the bytes stream past, that an upload is a Vagrant box: a tar archive, plain or gzip'd, with a
// top-level `metadata.json` holding a JSON object. The upload itself is never held back more than the parser
// needs: once metadata.json has been read, the inspector stops parsing and lets the rest flow through untouched.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import { extract, type Extract } from 'tar-stream';

const MAX_METADATA_BYTES = 64 * 1024;

export class NotABoxError extends Error {
  override name = 'NotABoxError';
}

const signatures: { magic: number[]; name: string }[] = [
  { magic: [0x50, 0x4b, 0x03, 0x04], name: 'a zip archive' },
  { magic: [0x42, 0x5a, 0x68], name: 'a bzip2 stream' },
  { magic: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], name: 'an xz stream' },
  { magic: [0x28, 0xb5, 0x2f, 0xfd], name: 'a zstd stream' },
];
const startsWith = (head: Buffer, magic: number[]) => magic.every((byte, i) => head[i] === byte);

const EXPECTED = "expected a tar archive (plain or gzip'd) holding metadata.json";

export class BoxInspector {
  private head: Buffer[] = [];
  private headBytes = 0;
  private input: Writable | undefined;
  private gunzip: Gunzip | undefined;
  private parser: Extract | undefined;
  private failure: NotABoxError | undefined;
  private done = false;
  /** The parsed metadata.json, once seen. */
  metadata: Record<string, unknown> | undefined;

  /** Feeds a chunk; resolves when the parser is ready for more, rejects with NotABoxError as soon as it is clear. */
  async write(chunk: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.done) return;
    if (!this.input) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.headBytes < 6) return;
      const head = Buffer.concat(this.head);
      this.head = [];
      this.start(head);
      return this.feed(head);
    }
    return this.feed(chunk);
  }

  /** At the end of the upload: resolves when it was a box, otherwise rejects with NotABoxError. */
  async end(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.done) return;
    if (!this.input) {
      const head = Buffer.concat(this.head);
      if (head.length === 0) throw new NotABoxError(`Not a Vagrant box: the upload is empty; ${EXPECTED}`);
      this.start(head);
      await this.feed(head);
    }
    const parser = this.parser!;
    const finished = new Promise<void>((resolve) => {
      parser.once('finish', resolve);
      parser.once('close', resolve);
      parser.once('error', () => resolve());
    });
    this.input!.end();
    await finished;
    if (this.failure) throw this.failure;
    if (!this.done) throw new NotABoxError(`Not a Vagrant box: the archive holds no metadata.json; ${EXPECTED}`);
  }

  /** Frees the parser (after a failure elsewhere). */
  destroy(): void {
    this.gunzip?.destroy();
    this.parser?.destroy();
  }

  private start(head: Buffer): void {
    const other = signatures.find((s) => startsWith(head, s.magic));
    if (other) throw this.fail(`Not a Vagrant box: the upload is ${other.name}; ${EXPECTED}`);
    const parser = extract();
    this.parser = parser;
    parser.on('entry', (header, stream, next) => {
      const name = header.name.replace(/^(\.\/)+/, '');
      if (name !== 'metadata.json' || (header.type !== 'file' && header.type !== 'contiguous-file')) {
        stream.on('end', () => next());
        stream.resume();
        return;
      }
      const parts: Buffer[] = [];
      let size = 0;
      stream.on('data', (data: unknown) => {
        const part = data as Buffer;
        size += part.length;
        if (size <= MAX_METADATA_BYTES) parts.push(part);
      });
      stream.on('end', () => {
        if (size > MAX_METADATA_BYTES) return this.fail(`Not a Vagrant box: metadata.json is larger than ${MAX_METADATA_BYTES} bytes`);
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(parts).toString('utf8'));
        } catch {
          return this.fail('Not a Vagrant box: metadata.json is not valid JSON');
        }
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return this.fail('Not a Vagrant box: metadata.json must hold a JSON object');
        this.metadata = parsed as Record<string, unknown>;
        this.done = true;
        // Nothing more to learn: stop parsing, let the rest of the upload pass untouched.
        this.destroy();
      });
    });
    parser.on('error', (error: Error) => {
      if (this.done) return;
      this.fail(`Not a Vagrant box: ${this.gunzip ? "the gzip'd data is not a tar archive" : 'not a tar archive'} (${error.message.replace(/\.$/, '')}); ${EXPECTED}`);
    });
    if (head[0] === 0x1f && head[1] === 0x8b) {
      const gunzip = createGunzip();
      this.gunzip = gunzip;
      gunzip.on('error', (error: Error) => {
        if (!this.done) this.fail(`Not a Vagrant box: the gzip stream is corrupt (${error.message}); ${EXPECTED}`);
      });
      gunzip.pipe(parser as unknown as NodeJS.WritableStream);
      this.input = gunzip;
    } else {
      this.input = parser as unknown as Writable;
    }
  }

  private fail(message: string): NotABoxError {
    this.failure ??= new NotABoxError(message);
    this.destroy();
    return this.failure;
  }

  private async feed(chunk: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.done) return;
    const input = this.input!;
    if (input.write(chunk)) return;
    // Wait until the parser has caught up, or failed, or finished its job.
    const ac = new AbortController();
    const settled = [
      once(input, 'drain', { signal: ac.signal }),
      once(input, 'close', { signal: ac.signal }),
      ...(this.gunzip && this.parser ? [once(this.parser as unknown as NodeJS.EventEmitter, 'close', { signal: ac.signal })] : []),
    ];
    await Promise.race(settled.map((p) => p.catch(() => undefined)));
    ac.abort();
    if (this.failure) throw this.failure;
  }
}
