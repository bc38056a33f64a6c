// Which lines a process writes: JSON unless a person reads them at a terminal, or BOXYARD_LOG_FORMAT says; and the
// readable line carries what the JSON record does.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LogFormatError, logFormat, prettyLogStream } from './log-format.ts';

describe('log format', () => {
  it('is JSON for a pipe, a file, a pod or systemd (stdout not a terminal) and readable lines on a terminal', () => {
    expect(logFormat({}, { isTTY: false })).toBe('json');
    expect(logFormat({}, {})).toBe('json');
    expect(logFormat({}, { isTTY: true })).toBe('pretty');
    expect(logFormat({ BOXYARD_LOG_FORMAT: '' }, { isTTY: true })).toBe('pretty');
  });

  it('BOXYARD_LOG_FORMAT overrides either way; another value is refused, naming the choices', () => {
    expect(logFormat({ BOXYARD_LOG_FORMAT: 'json' }, { isTTY: true })).toBe('json');
    expect(logFormat({ BOXYARD_LOG_FORMAT: 'pretty' }, { isTTY: false })).toBe('pretty');
    expect(() => logFormat({ BOXYARD_LOG_FORMAT: 'yes' }, {})).toThrow(LogFormatError);
    expect(() => logFormat({ BOXYARD_LOG_FORMAT: 'yes' }, {})).toThrow(/must be "json" or "pretty"/);
  });

  it('a readable line: time, level, who logged it, the message and the other fields on the same line', async () => {
    let text = '';
    const stream = prettyLogStream('file-share', new Writable({ write: (chunk: Buffer, _encoding, done) => ((text += chunk.toString()), done()) }));
    const logger = pino({ level: 'info' }, stream);
    logger.info({ res: { statusCode: 404 }, url: '/files/a b' }, 'request completed');
    logger.debug('not at info');
    await new Promise((resolve) => setImmediate(resolve));
    const lines = text.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: file-share: request completed \{"res":\{"statusCode":404\},"url":"\/files\/a b"\}$/);
  });
});
