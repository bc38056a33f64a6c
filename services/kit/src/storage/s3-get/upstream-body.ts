// One GET to the object storage over its own connection, read without a fresh buffer per socket read.
//
// Why not an HTTP client library: minio-js (node:http) and undici hand every socket read over as a new buffer
// through a stream hop; relaying 512 MiB that way cost ~1.1–1.8 CPU-s on the main thread and ran at 0.2–0.3× a
// direct GET on 2 cores. Here the socket reads (`onread`) into two reused 1 MiB slabs; a download (`writeTo`)
// writes views of them to the client and hands a slab back to the socket once the client's socket took its bytes:
// ~0.25 CPU-s per 512 MiB, no garbage. Any other reader gets an ordinary Readable (fresh buffers, as usual).
// The connection closes after the response (Connection: close), so there is no pool to keep healthy.
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { Readable, type Writable } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { BodyDecoder, parseResponseHead, ProtocolError, type ResponseHead } from './http1-framing.ts';

/**
 * 2 x 1 MiB per download: one is read into while the client's socket takes the other. Measured on loopback against
 * 4 x 256 KiB (the local store's FileBody then): ~0.25 instead of ~0.35 CPU-s per 512 MiB, as fast or faster; 4 x 1 MiB
 * and 2 x 2 MiB were no better.
 */
const SLAB_BYTES = 1024 * 1024;
/** Slabs per download: reads of the next one overlap the client's writes of the previous ones. */
const DEPTH = 2;
/** A slab's rest is read into until less than this is left (a TLS read is one 16 KiB record). */
const MIN_READ = 64 * 1024;
/** Reads for an ordinary Readable consumer, into fresh buffers it may keep. */
const STREAM_READ = 64 * 1024;
const MAX_HEAD = 64 * 1024;

export interface UpstreamRequest {
  url: URL;
  /** Extra request headers (e.g. Range); Host and Connection are set here. */
  headers?: Record<string, string>;
  /** Until the response head has arrived; the body may then take as long as the client does. */
  headTimeoutMs: number;
  /** For https: options of tls.connect (e.g. `ca`); system defaults otherwise. */
  tls?: ConnectionOptions;
}

export interface UpstreamResponse extends ResponseHead {
  body: UpstreamBody;
}

interface Slab {
  buffer: Buffer;
  /** Client writes of this slab's bytes still in flight. */
  writes: number;
  /** Bytes of it already read into. */
  fill: number;
}

type Phase = 'head' | 'waiting' | 'pool' | 'stream' | 'ended';

const codeError = (message: string, code: string) => Object.assign(new Error(message), { code });

export class UpstreamBody extends Readable {
  /** Body bytes received so far (as fs.ReadStream's `bytesRead`); storage metrics count downloads with it. */
  bytesRead = 0;
  private readonly socket: Socket;
  private phase: Phase = 'head';
  private head = Buffer.alloc(0);
  private decoder: BodyDecoder | undefined;
  /** Body bytes that arrived with the head, sent before anything read later. */
  private early: Buffer[] = [];
  private readonly slabs: Slab[];
  private current: Slab;
  /** The buffer the socket reads into next (onread asks for it after each read). */
  private next: Buffer;
  private readingPaused = false;
  private failure: Error | undefined;
  private onHead: { resolve(head: ResponseHead): void; reject(error: Error): void } | undefined;
  private writeTarget: { out: Writable; inFlight: number; resolve(): void; reject(error: Error): void } | undefined;

  /** Connects, sends the GET and waits for the response head. The body is not read until someone reads it. */
  static async open(request: UpstreamRequest): Promise<UpstreamResponse> {
    const body = new UpstreamBody(request);
    const head = await new Promise<ResponseHead>((resolve, reject) => (body.onHead = { resolve, reject }));
    return { ...head, body };
  }

  private constructor(request: UpstreamRequest) {
    super({ highWaterMark: STREAM_READ });
    this.slabs = [{ buffer: Buffer.allocUnsafeSlow(SLAB_BYTES), writes: 0, fill: 0 }]; // the rest when a download starts
    this.current = this.slabs[0]!;
    this.next = this.current.buffer; // the head is read here too, and copied out
    const { url } = request;
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const secure = url.protocol === 'https:';
    const port = url.port ? Number(url.port) : secure ? 443 : 80;
    const onread = { buffer: () => this.next, callback: (nread: number, buffer: Buffer) => this.onRead(nread, buffer) };
    // TLSSocket takes `onread` as net.Socket does (one read per 16 KiB record), though @types/node omits it.
    this.socket = secure
      ? tlsConnect({ ...request.tls, host, port, onread, ...(isIP(host) ? {} : { servername: host }) } as ConnectionOptions)
      : netConnect({ host, port, onread });
    this.socket.setNoDelay(true);
    this.socket.setTimeout(request.headTimeoutMs, () => {
      this.socket.destroy(codeError(`no answer from the storage at ${url.host} within ${request.headTimeoutMs} ms`, 'ETIMEDOUT'));
    });
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('end', () => this.onEnd());
    this.socket.on('close', () => {
      if (this.phase !== 'ended') this.fail(codeError('the storage closed the connection before the end of the response', 'ECONNRESET'));
    });
    // Flowing, though no data is ever pushed (onread takes it all): only then does the socket emit 'end' and close.
    this.socket.resume();
    const lines = [`GET ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', 'User-Agent: boxyard'];
    for (const [name, value] of Object.entries(request.headers ?? {})) lines.push(`${name}: ${value}`);
    this.socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  }

  /** Reads the (small) body as text, at most `maxBytes` of it; for error responses. */
  async text(maxBytes: number): Promise<string> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of this as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= maxBytes) break;
    }
    this.destroy();
    return Buffer.concat(chunks).toString('utf8', 0, Math.min(size, maxBytes));
  }

  /**
   * Writes the body to `out` (not ending it) through the reused slabs. Rejects when `out` closes first (the client
   * went away) or the storage fails mid-body. Closes the storage connection either way. Only for a body nothing
   * has read yet.
   */
  async writeTo(out: Writable): Promise<void> {
    if (this.phase !== 'waiting' || this.readableDidRead || this.destroyed) throw new Error('UpstreamBody.writeTo: the body is already being read');
    this.phase = 'pool';
    while (this.slabs.length < DEPTH) this.slabs.push({ buffer: Buffer.allocUnsafeSlow(SLAB_BYTES), writes: 0, fill: 0 });
    const onClose = () => this.fail(new Error('the response closed before the body was written'));
    out.once('close', onClose);
    try {
      await new Promise<void>((resolve, reject) => {
        this.writeTarget = { out, inFlight: 0, resolve, reject };
        for (const chunk of this.early) this.send(chunk, undefined);
        this.early = [];
        if (this.failure) {
          this.fail(this.failure);
        } else if (this.decoder!.done) {
          this.phase = 'ended'; // all of it came with the head: done once the client took it
          this.finishWrites();
        } else {
          this.resumeReading();
        }
      });
    } finally {
      out.removeListener('close', onClose);
      this.destroy();
    }
  }

  override _read(): void {
    if (this.phase === 'waiting') {
      this.phase = 'stream';
      for (const chunk of this.early) this.push(chunk);
      this.early = [];
      if (this.failure) this.destroy(this.failure);
      else if (this.decoder!.done) this.endStream();
      else this.resumeReading();
    } else if (this.phase === 'stream') {
      this.resumeReading();
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.phase !== 'ended') this.phase = 'ended';
    this.socket.destroy();
    const target = this.writeTarget;
    this.writeTarget = undefined;
    target?.reject(error ?? new Error('the download was closed before its end'));
    callback(error);
  }

  private resumeReading(): void {
    if (!this.readingPaused) return;
    this.readingPaused = false;
    this.socket.resume();
  }

  /** The socket read `nread` bytes into `buffer` (the one `next` was); returns false to stop reading for now. */
  private onRead(nread: number, buffer: Buffer): boolean {
    try {
      const data = buffer.subarray(0, nread);
      const more =
        this.phase === 'head'
          ? this.readHead(data)
          : this.phase === 'pool'
            ? this.readIntoSlab(data)
            : this.phase === 'stream'
              ? this.readForStream(data, buffer)
              : false;
      if (!more) this.readingPaused = true;
      return more;
    } catch (error) {
      this.socket.destroy(error as Error); // a protocol error: reported through the socket's 'error'
      return false;
    }
  }

  private readHead(data: Buffer): boolean {
    this.head = Buffer.concat([this.head, data]); // a fresh copy: `data` is a slab the body is read into later
    for (;;) {
      const end = this.head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (this.head.length > MAX_HEAD) throw new ProtocolError('the response head from the storage is too large');
        return true;
      }
      const head = parseResponseHead(this.head.toString('latin1', 0, end));
      this.head = this.head.subarray(end + 4);
      if (head.status >= 100 && head.status < 200) continue; // 100 Continue and the like: the real answer follows
      this.decoder = new BodyDecoder(head);
      this.decoder.feed(this.head, (chunk) => {
        this.bytesRead += chunk.length;
        this.early.push(chunk);
      });
      this.head = Buffer.alloc(0);
      this.phase = 'waiting';
      this.socket.setTimeout(0);
      this.onHead?.resolve(head);
      this.onHead = undefined;
      return false; // the rest waits in the kernel until someone reads the body
    }
  }

  private readIntoSlab(data: Buffer): boolean {
    const slab = this.current;
    slab.fill += data.length;
    this.decoder!.feed(data, (chunk) => {
      this.bytesRead += chunk.length;
      this.send(chunk, slab);
    });
    if (this.decoder!.done) {
      this.phase = 'ended';
      this.socket.destroy();
      this.finishWrites();
      return false;
    }
    if (SLAB_BYTES - slab.fill < MIN_READ) {
      const idle = this.slabs.find((candidate) => candidate !== slab && candidate.writes === 0)!; // there is one: see below
      idle.fill = 0;
      this.current = idle;
    }
    this.next = this.current.buffer.subarray(this.current.fill);
    return this.hasSpareSlab();
  }

  /**
   * Whether a slab besides the current one is idle. Reading stops while none is: the next read still has `next`,
   * but the one after might have nowhere to go (onread keeps reading into the last buffer it was given).
   */
  private hasSpareSlab(): boolean {
    return this.slabs.some((slab) => slab !== this.current && slab.writes === 0);
  }

  private readForStream(data: Buffer, buffer: Buffer): boolean {
    // The first read after the head may land in a slab (it was `next`); a stream consumer may keep what it gets.
    const pooled = this.slabs.some((slab) => slab.buffer.buffer === buffer.buffer);
    this.next = Buffer.allocUnsafe(STREAM_READ);
    let more = true;
    this.decoder!.feed(data, (chunk) => {
      this.bytesRead += chunk.length;
      more = this.push(pooled ? Buffer.from(chunk) : chunk);
    });
    if (this.destroyed) return false; // the consumer stopped on one of these chunks
    if (this.decoder!.done) {
      this.endStream();
      return false;
    }
    return more;
  }

  private endStream(): void {
    this.phase = 'ended';
    this.socket.destroy();
    this.push(null);
  }

  private send(chunk: Buffer, slab: Slab | undefined): void {
    const target = this.writeTarget!;
    target.inFlight++;
    if (slab) slab.writes++;
    target.out.write(chunk, (error) => {
      target.inFlight--;
      if (slab) slab.writes--;
      if (error) this.fail(error);
      else if (this.phase === 'ended') this.finishWrites();
      else if (slab?.writes === 0 && this.hasSpareSlab()) this.resumeReading();
    });
  }

  private finishWrites(): void {
    const target = this.writeTarget;
    if (!target || target.inFlight > 0) return;
    this.phase = 'ended';
    this.writeTarget = undefined;
    target.resolve();
  }

  private onEnd(): void {
    if (this.phase === 'head' || !this.decoder) return; // 'close' reports it
    try {
      this.decoder.end();
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (this.phase === 'pool') {
      this.phase = 'ended';
      this.finishWrites();
    } else if (this.phase === 'stream') {
      this.endStream();
    }
  }

  private fail(error: Error): void {
    if (this.phase === 'ended' && !this.writeTarget) return;
    this.socket.destroy();
    if (this.onHead) {
      this.phase = 'ended';
      this.onHead.reject(error);
      this.onHead = undefined;
    } else if (this.phase === 'waiting') {
      if (!this.decoder?.done) this.failure ??= error; // nobody reads yet: told to whoever starts reading
    } else {
      this.phase = 'ended';
      const target = this.writeTarget;
      this.writeTarget = undefined;
      if (target) target.reject(error);
      else this.destroy(error);
    }
  }
}
