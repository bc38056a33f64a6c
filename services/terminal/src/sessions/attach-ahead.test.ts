import { describe, expect, it } from 'vitest';
import { createAttachAhead } from './attach-ahead.ts';

describe('attach authorization asked for ahead', () => {
  it('is given once, to an attach of the same session at the same address', async () => {
    const ahead = createAttachAhead();
    ahead.prepare('s1', 'unix:/a.sock', async () => 'auth-1');
    expect(await ahead.take('s1', 'unix:/a.sock')).toBe('auth-1');
    expect(await ahead.take('s1', 'unix:/a.sock')).toBeUndefined();
    expect(ahead.size).toBe(0);
  });

  it('is not given for another address (the session moved), nor another session', async () => {
    const ahead = createAttachAhead();
    ahead.prepare('s1', 'unix:/a.sock', async () => 'auth-1');
    expect(await ahead.take('s2', 'unix:/a.sock')).toBeUndefined();
    expect(await ahead.take('s1', '10.0.0.7:7681')).toBeUndefined();
    // and it is gone: a second try at the right address gets nothing either
    expect(await ahead.take('s1', 'unix:/a.sock')).toBeUndefined();
  });

  it('drops one the agent refused: the attach challenges on its own', async () => {
    const ahead = createAttachAhead();
    ahead.prepare('s1', 'unix:/a.sock', () => Promise.reject(new Error('not the agent')));
    expect(await ahead.take('s1', 'unix:/a.sock')).toBeUndefined();
  });

  it('forgets one not used in time, and holds at most `max`', async () => {
    const ahead = createAttachAhead({ useWithinMs: 20, max: 2 });
    ahead.prepare('s1', 'unix:/a.sock', async () => 'auth-1');
    ahead.prepare('s2', 'unix:/b.sock', async () => 'auth-2');
    ahead.prepare('s3', 'unix:/c.sock', async () => 'auth-3');
    expect(ahead.size).toBe(2);
    expect(await ahead.take('s3', 'unix:/c.sock')).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(ahead.size).toBe(0);
    expect(await ahead.take('s1', 'unix:/a.sock')).toBeUndefined();
  });

  it('disposes of what nobody took: not used in time, replaced, or for another address', async () => {
    const disposed: string[] = [];
    const ahead = createAttachAhead<string>({ useWithinMs: 20, dispose: (value) => disposed.push(value) });
    ahead.prepare('s1', 'unix:/a.sock', async () => 'stream-1');
    ahead.prepare('s1', 'unix:/a.sock', async () => 'stream-2');
    ahead.prepare('s2', 'unix:/b.sock', async () => 'stream-3');
    ahead.prepare('s3', 'unix:/c.sock', async () => 'stream-4');
    expect(await ahead.take('s2', 'unix:/moved.sock')).toBeUndefined();
    expect(await ahead.take('s3', 'unix:/c.sock')).toBe('stream-4');
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(disposed.sort()).toEqual(['stream-1', 'stream-2', 'stream-3']);
  });
});
