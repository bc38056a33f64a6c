// The local backend's record of agents' exit statuses is bounded: a gateway that has run many sessions keeps only
// the newest EXIT_CODES_KEPT, which is what the reaper's probe reads (within seconds of an exit).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES_KEPT, rememberExit } from './local-start.ts';

describe('exit statuses of ended agents', () => {
  it('keeps the newest ones only, however many sessions ended', () => {
    const exitCodes = new Map<string, number | null>();
    const ids = Array.from({ length: EXIT_CODES_KEPT + 500 }, () => randomUUID());
    ids.forEach((id, i) => rememberExit(exitCodes, id, i % 3 === 0 ? null : i % 256));
    expect(exitCodes.size).toBe(EXIT_CODES_KEPT);
    expect(exitCodes.has(ids[0]!)).toBe(false);
    expect(exitCodes.has(ids[499]!)).toBe(false);
    expect(exitCodes.get(ids[500]!)).toBe(500 % 256);
    expect(exitCodes.get(ids.at(-1)!)).toBe((ids.length - 1) % 256);
  });

  it('answers the latest status of a session, and a session recorded again counts as new', () => {
    const exitCodes = new Map<string, number | null>();
    rememberExit(exitCodes, 'a', 1, 2);
    rememberExit(exitCodes, 'b', 2, 2);
    rememberExit(exitCodes, 'a', 0, 2);
    rememberExit(exitCodes, 'c', null, 2);
    expect([...exitCodes]).toEqual([
      ['a', 0],
      ['c', null],
    ]);
  });
});
