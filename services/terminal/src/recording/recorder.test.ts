// The recorder's output path with an in-memory stand-in for the object store and PostgreSQL (what reaches them is
// covered against the real ones in recording.test.ts and tap.test.ts): characters split across reads, ASCII
// taken without the decoder, overlapping streams deduplicated by offset, and a dropped stretch marked.
import { describe, expect, it } from 'vitest';
import { Recorder, type RecorderOptions } from './recorder.ts';

function recorder(overrides: Partial<RecorderOptions> = {}) {
  const chunks: string[] = [];
  const objects = {
    async put(_key: string, body: AsyncIterable<Uint8Array>) {
      const parts: Buffer[] = [];
      for await (const part of body) parts.push(Buffer.from(part));
      chunks.push(Buffer.concat(parts).toString('utf8'));
      return { size: parts.reduce((n, p) => n + p.length, 0) };
    },
  } as unknown as RecorderOptions['objects'];
  const store = { commitChunk: async () => true, renew: async () => {}, finish: async () => {} } as unknown as RecorderOptions['store'];
  const r = new Recorder({
    id: 'r',
    writer: 'w',
    objects,
    store,
    startedAt: Date.now(),
    seq: 0,
    bytes: 0,
    offset: 0,
    maxBytes: 1 << 30,
    flushMs: 60_000,
    leaseSeconds: 15,
    input: false,
    required: false,
    onFailure: () => {},
    onEnd: () => {},
    pace: () => {},
    log: { warn: () => {} },
    ...overrides,
  });
  const events = async () => {
    await r.finish();
    return chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as [number, string, string]);
  };
  const output = async () =>
    (await events())
      .filter(([, code]) => code === 'o')
      .map(([, , text]) => text)
      .join('');
  return { r, events, output };
}

const live = { paced: false, mayGap: true };

describe('recorder output (in-memory store stand-in)', () => {
  it('keeps characters split across reads, before and after ASCII', async () => {
    const { r, output } = recorder();
    const text = Buffer.from('ab é€ 😀 cd', 'utf8');
    const cuts = [3, 4, 7, 9, 11, text.length];
    let from = 0;
    for (const to of cuts) {
      r.output(from, text.subarray(from, to), live);
      from = to;
    }
    expect(await output()).toBe('ab é€ 😀 cd');
  });

  it('records overlapping streams once and marks a real gap', async () => {
    const { r, events, output } = recorder();
    r.output(0, Buffer.from('hello '), live);
    r.output(3, Buffer.from('lo world'), live); // overlaps: only ' world'... from offset 6
    r.output(20, Buffer.from('later'), { paced: false, mayGap: false }); // another stream still fills 11-20: dropped
    r.output(11, Buffer.from('-and-more'), live);
    r.output(30, Buffer.from('!'), live); // nothing will bring 20-30
    expect(await output()).toBe('hello world-and-more!');
    expect((await events()).filter(([, code]) => code === 'm').map(([, , text]) => text)).toContainEqual(expect.stringContaining('output missing here'));
  });
});
