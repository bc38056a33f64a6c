// Reads an upload's chunks, failing with UploadStalledError when the client sends nothing for `stallMs` while we
// wait for it (time spent waiting on storage does not count). A stall leaves the source un-destroyed, so the
// service can still answer 408 on the same connection (then closed); a for-await loop would destroy it.
import { HttpError } from '@boxyard/kit';
import type { Readable } from 'node:stream';

export class UploadStalledError extends HttpError {
  constructor(seconds: number) {
    super(408, `Upload stalled: no data received for ${seconds} s (uploads.stall_timeout_seconds); nothing was stored`);
  }
}

export class UploadCutOffError extends HttpError {
  constructor(cause?: unknown) {
    super(400, 'The upload was cut off before its end; nothing was stored');
    this.cause = cause;
  }
}

function nextEvent(source: Readable, stallMs: number, stallSeconds: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      clearTimeout(timer);
      source.off('readable', onReadable);
      source.off('end', onReadable);
      source.off('error', onError);
      source.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onReadable = () => done();
    const onError = (error: Error) => done(new UploadCutOffError(error));
    const onClose = () => done(source.readableEnded ? undefined : new UploadCutOffError());
    const timer = setTimeout(() => done(new UploadStalledError(stallSeconds)), stallMs);
    source.on('readable', onReadable);
    source.on('end', onReadable);
    source.on('error', onError);
    source.on('close', onClose);
  });
}

export async function* readWithStallTimeout(source: Readable, stallSeconds: number): AsyncGenerator<Buffer> {
  const stallMs = stallSeconds * 1000;
  for (;;) {
    if (source.errored) throw new UploadCutOffError(source.errored);
    const chunk = source.read() as Buffer | string | null;
    if (chunk !== null) {
      yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      continue;
    }
    if (source.readableEnded) return;
    if (source.destroyed) throw new UploadCutOffError();
    await nextEvent(source, stallMs, stallSeconds);
  }
}
