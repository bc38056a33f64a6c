import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readWithStallTimeout, UploadCutOffError, UploadStalledError } from './read-with-stall-timeout.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function collect(source: PassThrough, stallSeconds: number, perChunk?: () => Promise<void>): Promise<string> {
  let text = '';
  for await (const chunk of readWithStallTimeout(source, stallSeconds)) {
    text += chunk.toString();
    await perChunk?.();
  }
  return text;
}

describe('reading an upload with a stall time-out', () => {
  it('yields every chunk in order, and leaves no listener behind', async () => {
    const source = new PassThrough();
    const reading = collect(source, 1);
    for (const word of ['one ', 'two ', 'three']) {
      source.write(word);
      await sleep(5);
    }
    source.end();
    expect(await reading).toBe('one two three');
    for (const event of ['readable', 'end', 'error', 'close']) expect(source.listenerCount(event)).toBe(0);
  });

  it('fails with 408 when the client sends nothing for the time-out', async () => {
    const source = new PassThrough();
    source.write('start ');
    const error = await collect(source, 0.2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadStalledError);
    expect((error as UploadStalledError).statusCode).toBe(408);
    expect(source.destroyed).toBe(false); // the service still answers on this connection
    expect(source.listenerCount('readable')).toBe(0);
  });

  it('counts only time spent waiting for the client: pauses shorter than the time-out, and slow storage, add up to far more', async () => {
    const source = new PassThrough();
    // 10 pauses of 80 ms (0.8 s in all) with a 0.2 s time-out, each chunk then held 150 ms by the consumer.
    const sending = (async () => {
      for (let i = 0; i < 10; i++) {
        source.write(`${i}`);
        await sleep(80);
      }
      source.end();
    })();
    expect(await collect(source, 0.2, () => sleep(150))).toBe('0123456789');
    await sending;
  });

  it('fails as cut off when the connection goes away mid-body', async () => {
    const source = new PassThrough();
    const reading = collect(source, 5);
    source.write('partial');
    await sleep(10);
    source.destroy();
    expect(await reading.catch((e: unknown) => e)).toBeInstanceOf(UploadCutOffError);
  });
});
