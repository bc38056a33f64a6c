import { describe, expect, it } from 'vitest';
import { Scrollback } from './scrollback.ts';

describe('scrollback ring', () => {
  it('keeps everything while under capacity', () => {
    const ring = new Scrollback(16);
    ring.push(Buffer.from('hello '));
    ring.push(Buffer.from('world'));
    expect(ring.snapshot().toString()).toBe('hello world');
    expect(ring.size).toBe(11);
  });

  it('keeps only the newest bytes once full, never more than its capacity', () => {
    const ring = new Scrollback(8);
    for (const word of ['abc', 'defg', 'hijkl', 'mn']) ring.push(Buffer.from(word));
    expect(ring.snapshot().toString()).toBe('ghijklmn');
    ring.push(Buffer.from('0123456789ABCDEF'));
    expect(ring.snapshot().toString()).toBe('89ABCDEF');
    expect(ring.size).toBe(8);
  });

  it('never starts the replay in the middle of a UTF-8 character', () => {
    const ring = new Scrollback(4);
    ring.push(Buffer.from('aé€')); // 1 + 2 + 3 bytes: keeping 4 cuts é in half
    expect(ring.snapshot().toString()).toBe('€');
  });

  it('stays bounded over a long session of small writes', () => {
    const ring = new Scrollback(1000);
    for (let i = 0; i < 100_000; i++) ring.push(Buffer.from(`${i % 10}`));
    expect(ring.size).toBe(1000);
    expect(ring.snapshot().toString()).toBe('0123456789'.repeat(100));
  });

  it('keeps a copy of what it was given: the buffer a read landed in is reused for the next read', () => {
    const ring = new Scrollback(10);
    const read = Buffer.alloc(8);
    for (const word of ['abcd', 'efgh', 'ijk']) {
      read.write(word);
      ring.push(read, word.length);
      read.fill('#');
    }
    expect(ring.snapshot().toString()).toBe('bcdefghijk');
    expect(ring.total).toBe(11);
  });

  it('resumes a recording from an offset across the ring’s wrap, and says when that offset was dropped', () => {
    const ring = new Scrollback(6);
    ring.push(Buffer.from('0123'));
    ring.push(Buffer.from('4567'));
    expect(ring.since(3)).toEqual({ data: Buffer.from('34567'), gap: false });
    expect(ring.since(1)).toEqual({ data: Buffer.from('234567'), gap: true });
    expect(ring.since(8)).toEqual({ data: Buffer.alloc(0), gap: false });
    expect(ring.since(9)).toEqual({ data: Buffer.alloc(0), gap: true });
  });
});
