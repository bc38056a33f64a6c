import { createHash } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type * as NodePty from 'node-pty';
import type { IPty } from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { createPtyInput } from './pty-input.ts';

const pty = createRequire(import.meta.url)('node-pty') as typeof NodePty;
const terms: IPty[] = [];

/**
 * A pty running `command` with the line discipline in raw mode and no echo (what is read is the program's output),
 * resolved once that mode is set: input typed before it would be echoed and line-edited.
 */
async function spawn(command: string): Promise<{ term: IPty; output: () => Buffer; exited: Promise<void> }> {
  const term = pty.spawn('/bin/sh', ['-c', `stty raw -echo; echo READY; ${command}`], {
    name: 'xterm',
    cols: 80,
    rows: 24,
    env: { PATH: '/usr/bin:/bin' },
    encoding: null,
  });
  terms.push(term);
  const chunks: Buffer[] = [];
  term.onData((data) => chunks.push(data as unknown as Buffer));
  const exited = new Promise<void>((resolve) => term.onExit(() => resolve()));
  await until(() => Buffer.concat(chunks).includes('READY\n'), 'the pty in raw mode');
  chunks.length = 0;
  return { term, output: () => Buffer.concat(chunks), exited };
}

async function until(check: () => boolean, what: string | (() => string)): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

afterEach(() => {
  for (const term of terms.splice(0)) {
    try {
      term.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

describe('pty input', () => {
  it('delivers keystrokes in order', async () => {
    const { term, output } = await spawn('exec cat');
    const input = createPtyInput(term, (error) => expect.fail(error.message));
    for (const key of 'hello, pty') input.write(Buffer.from(key));
    await until(() => output().toString().includes('hello, pty'), 'the echo');
    expect(output().toString()).toContain('hello, pty');
    input.dispose();
  });

  it('queues a paste the program does not read yet, and loses or reorders nothing', async () => {
    // The program starts reading only after a second: the pty's buffer fills and the rest waits here.
    const { term, output } = await spawn('sleep 1; head -c 2097152 | sha256sum');
    const input = createPtyInput(term, (error) => expect.fail(error.message));
    const paste = Buffer.alloc(2 * 1024 * 1024);
    for (let i = 0; i < paste.length; i++) paste[i] = 0x20 + (i % 90); // printable: no control characters for the line discipline
    for (let offset = 0; offset < paste.length; offset += 4096) input.write(paste.subarray(offset, offset + 4096));
    expect(input.queued).toBeGreaterThan(0);
    await until(() => input.queued === 0, 'the queue to drain');
    const expected = createHash('sha256').update(paste).digest('hex');
    await until(
      () => output().toString().includes(expected),
      () => `the checksum ${expected}; got ${JSON.stringify(output().toString().slice(-300))} (${output().length} bytes)`,
    );
    input.dispose();
  });

  it('never writes to the descriptor once the shell has gone: its number may belong to another file by then', async () => {
    const { term, exited } = await spawn('exit 0');
    const errors: Error[] = [];
    const input = createPtyInput(term, (error) => errors.push(error));
    const fd = (term as IPty & { fd: number }).fd;
    await exited;
    await until(() => (term as IPty & { _writable?: boolean })._writable === false, 'node-pty to close the pty');
    // The lowest free number is handed out next: the pty's old one.
    const dir = mkdtempSync(join(tmpdir(), 'pty-input-'));
    const other = openSync(join(dir, 'other'), 'w+');
    try {
      expect(other).toBe(fd);
      expect(() => input.write(Buffer.from('too late'))).not.toThrow();
      expect(readFileSync(join(dir, 'other'), 'utf8')).toBe('');
      expect(errors).toEqual([]);
      expect(input.queued).toBe(0);
    } finally {
      closeSync(other);
      rmSync(dir, { recursive: true });
    }
    input.dispose();
  });
});
