// The little of HTTP/1.1 a GET from object storage needs (RFC 9112): a response head, and where its body ends
// (Content-Length, chunked, or the connection's close). Body bytes are handed on as views of the buffer they were
// read into, never copied, so a relayed download costs no allocation per chunk.

export interface ResponseHead {
  status: number;
  /** Lower-case names; repeated fields joined with ', '. */
  headers: Map<string, string>;
}

const MAX_CHUNK_LINE = 4096;

export class ProtocolError extends Error {
  override name = 'ProtocolError';
  /** Mapped like a broken connection: the storage (or something in between) is not speaking HTTP/1.1 to us. */
  readonly code = 'ECONNRESET';
}

/** Parses the head of a response (the text before the blank line, in latin1). */
export function parseResponseHead(text: string): ResponseHead {
  const lines = text.split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  if (!match) throw new ProtocolError(`the storage did not answer with HTTP/1.1: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new ProtocolError(`malformed header line from the storage: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const seen = headers.get(name);
    headers.set(name, seen === undefined ? value : `${seen}, ${value}`);
  }
  return { status: Number(match[1]), headers };
}

type State = 'length' | 'until-close' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailer' | 'done';

/** Cuts a response body out of the bytes that follow its head. */
export class BodyDecoder {
  private state: State;
  private remaining = 0;
  private line = '';

  constructor(head: ResponseHead) {
    const { status, headers } = head;
    const transferEncoding = headers.get('transfer-encoding');
    const contentLength = headers.get('content-length');
    if (status === 204 || status === 304) {
      this.state = 'done';
    } else if (transferEncoding !== undefined) {
      // The final coding decides: chunked ends itself, anything else runs until the connection closes.
      const codings = transferEncoding
        .toLowerCase()
        .split(',')
        .map((coding) => coding.trim());
      this.state = codings.at(-1) === 'chunked' ? 'chunk-size' : 'until-close';
    } else if (contentLength !== undefined) {
      if (!/^\d{1,15}$/.test(contentLength)) throw new ProtocolError(`invalid Content-Length from the storage: ${JSON.stringify(contentLength)}`);
      this.remaining = Number(contentLength);
      this.state = this.remaining === 0 ? 'done' : 'length';
    } else {
      this.state = 'until-close';
    }
  }

  get done(): boolean {
    return this.state === 'done';
  }

  /** Calls `onData` with each piece of body in `input` (views of it); bytes after the body's end are ignored. */
  feed(input: Buffer, onData: (data: Buffer) => void): void {
    let at = 0;
    while (at < input.length && this.state !== 'done') {
      if (this.state === 'until-close') {
        onData(at === 0 ? input : input.subarray(at));
        return;
      }
      if (this.state === 'length' || this.state === 'chunk-data') {
        const take = Math.min(this.remaining, input.length - at);
        onData(take === input.length ? input : input.subarray(at, at + take));
        at += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = this.state === 'length' ? 'done' : 'chunk-end';
        continue;
      }
      // A framing line of a chunked body: the size, the CRLF after the data, or a trailer field.
      const newline = input.indexOf(10, at);
      const end = newline < 0 ? input.length : newline;
      this.line += input.toString('latin1', at, end);
      if (this.line.length > MAX_CHUNK_LINE) throw new ProtocolError('a chunked body line from the storage is too long');
      at = end + 1;
      if (newline < 0) return;
      const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
      this.line = '';
      this.onLine(line);
    }
  }

  /** The connection ended: throws when that cut the body short. */
  end(): void {
    if (this.state === 'until-close') this.state = 'done';
    if (this.state !== 'done') throw new ProtocolError('the storage closed the connection before the end of the body');
  }

  private onLine(line: string): void {
    if (this.state === 'chunk-size') {
      const size = line.split(';', 1)[0]!.trim();
      if (!/^[0-9a-fA-F]{1,12}$/.test(size)) throw new ProtocolError(`invalid chunk size from the storage: ${JSON.stringify(line.slice(0, 40))}`);
      this.remaining = Number.parseInt(size, 16);
      this.state = this.remaining === 0 ? 'trailer' : 'chunk-data';
    } else if (this.state === 'chunk-end') {
      if (line !== '') throw new ProtocolError('a chunk from the storage did not end with CRLF');
      this.state = 'chunk-size';
    } else if (line === '') {
      this.state = 'done'; // the blank line after the (ignored) trailer fields
    }
  }
}
