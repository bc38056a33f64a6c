import { describe, expect, it } from 'vitest';
import { cachedReading } from './cached-reading.ts';

describe('cachedReading', () => {
  it('runs the read once for a burst of concurrent and later calls within the interval, then again after it', async () => {
    let reads = 0;
    let clock = 0;
    let release: () => void = () => {};
    const read = cachedReading(
      async () => {
        reads++;
        await new Promise<void>((r) => (release = r));
        return reads;
      },
      15,
      () => clock,
    );
    const burst = Array.from({ length: 50 }, () => read());
    release();
    expect(await Promise.all(burst)).toEqual(Array(50).fill(1));
    clock = 14_999;
    expect(await read()).toBe(1);
    expect(reads).toBe(1);
    clock = 15_000;
    const next = read();
    release();
    expect(await next).toBe(2);
    expect(reads).toBe(2);
  });

  it('does not keep a failed read: the next call tries again', async () => {
    let reads = 0;
    const read = cachedReading(
      async () => {
        reads++;
        if (reads === 1) throw new Error('database down');
        return 'ok';
      },
      15,
      () => 0,
    );
    await expect(read()).rejects.toThrow('database down');
    expect(await read()).toBe('ok');
  });
});
