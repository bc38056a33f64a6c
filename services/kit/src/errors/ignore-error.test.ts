// A dropped failure still reaches the log at debug, with its reason; a handled mark keeps the rejection for its reader.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { ignoreError, logIgnoredErrorsTo, markHandled } from './ignore-error.ts';

it('ignoreError resolves to undefined and logs the error at debug with its reason (only at debug)', async () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  logIgnoredErrorsTo(logger);
  expect(await Promise.reject(new Error('socket already closed')).catch(ignoreError('closing what may be closed'))).toBeUndefined();
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({
    level: 20,
    reason: 'closing what may be closed',
    msg: 'ignored: closing what may be closed',
    err: { message: 'socket already closed' },
  });
  logger.level = 'info';
  await Promise.reject(new Error('quiet')).catch(ignoreError('at info nothing is written'));
  expect(lines).toHaveLength(1);
});

it('markHandled keeps the rejection for whoever awaits the promise later', async () => {
  const failing = Promise.reject(new Error('read later'));
  markHandled(failing);
  await new Promise((resolve) => setTimeout(resolve, 10)); // a turn in which Node would report it unhandled
  await expect(failing).rejects.toThrow('read later');
});
