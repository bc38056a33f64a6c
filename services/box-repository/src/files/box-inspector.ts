// Checks, while the bytes stream past, that an upload is a Vagrant box: a tar archive, plain or gzip'd, with a
// top-level `metadata.json` holding a JSON object. The upload itself is never held back more than the parser
// needs: once metadata.json has been read, the inspector stops parsing and lets the rest flow through untouched.
// Until then what it unpacks is bounded (InspectionLimits): a gzip bomb — a few MB that inflate to many GB of
// padding before (or instead of) metadata.json — is refused once a limit is passed, not inflated to its end.
import { once } from 'node:events';
import { Transform, type Writable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import { extract, type Extract } from 'tar-stream';
import { ignoreError } from '@boxyard/kit';

const MAX_METADATA_BYTES = 64 * 1024;
/**
 * The expansion ratio is only judged once this much has been unpacked: the first megabytes of real boxes (tar
 * headers and padding, the zero-filled head of a disk image) compress far better than the whole.
 */
export const RATIO_GRACE_BYTES = 64 * 1024 * 1024;

/** How much of an archive the inspector unpacks while looking for metadata.json (`uploads.inspection`). */
export interface InspectionLimits {
  /** Bytes of tar data (after gunzip) read before metadata.json; also the largest entry it will read past. */
  max_unpacked_bytes: number;
  /** Unpacked bytes per uploaded byte, judged once RATIO_GRACE_BYTES have been unpacked. */
  max_expansion_ratio: number;
  /** Archive entries before metadata.json. */
  max_entries: number;
}

export const DEFAULT_INSPECTION_LIMITS: InspectionLimits = {
  max_unpacked_bytes: 64 * 1024 ** 3,
  max_expansion_ratio: 100,
  max_entries: 10_000,
};

export class NotABoxError extends Error {
  override name = 'NotABoxError';
  /** `box_format`: not a box; `box_limit`: a limit of uploads.inspection was passed (params say which). */
  readonly rule: 'box_format' | 'box_limit';
  readonly params: Record<string, unknown>;
  constructor(message: string, rule: 'box_format' | 'box_limit' = 'box_format', params: Record<string, unknown> = {}) {
    super(message);
    this.rule = rule;
    this.params = params;
  }
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
  private meter: Transform | undefined;
  private parser: Extract | undefined;
  private failure: NotABoxError | undefined;
  private done = false;
  private entries = 0;
  /** The parsed metadata.json, once seen. */
  metadata: Record<string, unknown> | undefined;
  /** Bytes of the upload handed to the parser (gzip'd or not). */
  packedBytes = 0;
  /** Bytes of tar data the parser was given (after gunzip). */
  unpackedBytes = 0;

  private readonly limits: InspectionLimits;

  constructor(limits: InspectionLimits = DEFAULT_INSPECTION_LIMITS) {
    this.limits = limits;
  }

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
    this.meter?.destroy();
    this.parser?.destroy();
  }

  /** Refuses (as NotABoxError) once the tar data read so far passes a limit; undefined while within them. */
  private overLimit(): NotABoxError | undefined {
    const { max_unpacked_bytes: maxBytes, max_expansion_ratio: maxRatio } = this.limits;
    if (this.unpackedBytes > maxBytes) {
      return this.limitError(`more than ${maxBytes} bytes of archive come before metadata.json`, {
        limit: 'uploads.inspection.max_unpacked_bytes',
        max: maxBytes,
      });
    }
    if (this.unpackedBytes > RATIO_GRACE_BYTES && this.unpackedBytes > maxRatio * this.packedBytes) {
      return this.limitError(`the gzip stream expands more than ${maxRatio} times before metadata.json (a gzip bomb?)`, {
        limit: 'uploads.inspection.max_expansion_ratio',
        max: maxRatio,
      });
    }
    return undefined;
  }

  private limitError(reason: string, params: Record<string, unknown>): NotABoxError {
    return new NotABoxError(`Not a Vagrant box this service accepts: ${reason}; nothing was stored`, 'box_limit', params);
  }

  private start(head: Buffer): void {
    const other = signatures.find((s) => startsWith(head, s.magic));
    if (other) throw this.fail(`Not a Vagrant box: the upload is ${other.name}; ${EXPECTED}`);
    const parser = extract();
    this.parser = parser;
    parser.on('entry', (header, stream, next) => {
      if (++this.entries > this.limits.max_entries) {
        this.failWith(
          this.limitError(`more than ${this.limits.max_entries} archive entries come before metadata.json`, {
            limit: 'uploads.inspection.max_entries',
            max: this.limits.max_entries,
          }),
        );
        return;
      }
      // An entry larger than what will be read is refused from its header, before any of it is unpacked.
      if ((header.size ?? 0) > this.limits.max_unpacked_bytes) {
        this.failWith(
          this.limitError(`an entry of ${header.size} bytes comes before metadata.json (more than ${this.limits.max_unpacked_bytes})`, {
            limit: 'uploads.inspection.max_unpacked_bytes',
            max: this.limits.max_unpacked_bytes,
          }),
        );
        return;
      }
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
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          return this.fail('Not a Vagrant box: metadata.json must hold a JSON object');
        this.metadata = parsed as Record<string, unknown>;
        this.done = true;
        // Nothing more to learn: stop parsing, let the rest of the upload pass untouched.
        this.destroy();
      });
    });
    parser.on('error', (error: Error) => {
      if (this.done) return;
      this.fail(
        `Not a Vagrant box: ${this.gunzip ? "the gzip'd data is not a tar archive" : 'not a tar archive'} (${error.message.replace(/\.$/, '')}); ${EXPECTED}`,
      );
    });
    if (head[0] === 0x1f && head[1] === 0x8b) {
      const gunzip = createGunzip();
      this.gunzip = gunzip;
      gunzip.on('error', (error: Error) => {
        if (!this.done) this.fail(`Not a Vagrant box: the gzip stream is corrupt (${error.message}); ${EXPECTED}`);
      });
      // Counts what gunzip produces before the parser sees it; past a limit, gunzip is stopped (destroyed).
      const meter = new Transform({
        transform: (data: Buffer, _encoding, callback) => {
          this.unpackedBytes += data.length;
          const refusal = this.overLimit();
          if (refusal) {
            this.failWith(refusal);
            callback();
            return;
          }
          callback(null, data);
        },
      });
      this.meter = meter;
      gunzip.pipe(meter).pipe(parser as unknown as NodeJS.WritableStream);
      this.input = gunzip;
    } else {
      this.input = parser as unknown as Writable;
    }
  }

  private fail(message: string): NotABoxError {
    return this.failWith(new NotABoxError(message));
  }

  private failWith(error: NotABoxError): NotABoxError {
    this.failure ??= error;
    this.destroy();
    return this.failure;
  }

  private async feed(chunk: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.done) return;
    const input = this.input!;
    this.packedBytes += chunk.length;
    if (!this.gunzip) {
      // A plain tar: what is uploaded is what the parser reads.
      this.unpackedBytes = this.packedBytes;
      const refusal = this.overLimit();
      if (refusal) throw this.failWith(refusal);
    }
    if (input.write(chunk)) return;
    // Wait until the parser has caught up, or failed, or finished its job.
    const ac = new AbortController();
    const settled = [
      once(input, 'drain', { signal: ac.signal }),
      once(input, 'close', { signal: ac.signal }),
      ...(this.gunzip && this.parser ? [once(this.parser as unknown as NodeJS.EventEmitter, 'close', { signal: ac.signal })] : []),
    ];
    await Promise.race(settled.map((p) => p.catch(ignoreError('any of them settling ends the wait; failures are read from this.failure'))));
    ac.abort();
    if (this.failure) throw this.failure;
  }
}
