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

/**
 * Yields the source's chunks as they can be read. The listeners stay attached for the whole upload and one timer
 * watches for a stall (re-armed only when it fires early): a listener set and a timer per wait cost more than the
 * reading itself at 64 KiB a chunk.
 */
export async function* readWithStallTimeout(source: Readable, stallSeconds: number): AsyncGenerator<Buffer> {
  const stallMs = stallSeconds * 1000;
  let wake: ((error?: Error) => void) | undefined;
  let waitingSince = 0;
  let timer: NodeJS.Timeout | undefined;
  const settle = (error?: Error) => {
    const waiter = wake;
    wake = undefined;
    waiter?.(error);
  };
  const onReadable = () => settle();
  const onError = (error: Error) => settle(new UploadCutOffError(error));
  const onClose = () => settle(source.readableEnded ? undefined : new UploadCutOffError());
  const checkStall = () => {
    timer = undefined;
    if (!wake) return;
    const waited = Date.now() - waitingSince;
    if (waited >= stallMs) settle(new UploadStalledError(stallSeconds));
    else timer = setTimeout(checkStall, stallMs - waited);
  };
  source.on('readable', onReadable);
  source.on('end', onReadable);
  source.on('error', onError);
  source.on('close', onClose);
  try {
    for (;;) {
      if (source.errored) throw new UploadCutOffError(source.errored);
      const chunk = source.read() as Buffer | string | null;
      if (chunk !== null) {
        yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
        continue;
      }
      if (source.readableEnded) return;
      if (source.destroyed) throw new UploadCutOffError();
      // Only time spent waiting here counts towards a stall (not time the consumer spends on storage).
      await new Promise<void>((resolve, reject) => {
        waitingSince = Date.now();
        wake = (error) => (error ? reject(error) : resolve());
        timer ??= setTimeout(checkStall, stallMs);
      });
    }
  } finally {
    if (timer) clearTimeout(timer);
    source.off('readable', onReadable);
    source.off('end', onReadable);
    source.off('error', onError);
    source.off('close', onClose);
  }
}
