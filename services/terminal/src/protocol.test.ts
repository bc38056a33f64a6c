import { describe, expect, it } from 'vitest';
import { closeCodeFor, parseClientControl } from './protocol.ts';

describe('WebSocket protocol', () => {
  it('parses the control messages a client may send', () => {
    expect(parseClientControl('{"type":"resize","cols":120,"rows":40}')).toEqual({ ok: true, message: { type: 'resize', cols: 120, rows: 40 } });
    expect(parseClientControl('{"type":"ping"}')).toEqual({ ok: true, message: { type: 'ping' } });
  });
  it('explains what is wrong with anything else', () => {
    expect(parseClientControl('ls -la')).toMatchObject({ ok: false, error: expect.stringMatching(/binary frames/) });
    expect(parseClientControl('{"type":"resize","cols":0,"rows":5}')).toMatchObject({
      ok: false,
      error: expect.stringMatching(/invalid resize message: cols/),
    });
    expect(parseClientControl('{"type":"exec","cmd":"x"}')).toMatchObject({ ok: false, error: 'unknown message type "exec"' });
  });
  it('maps endings to close codes: 4000 + exit status, 43xx when the service ended the session', () => {
    expect(closeCodeFor('exited', 0)).toBe(4000);
    expect(closeCodeFor('exited', 130)).toBe(4130);
    expect(closeCodeFor('exited', null)).toBe(4255);
    expect(closeCodeFor('stopped', 129)).toBe(4300);
    expect(closeCodeFor('idle_timeout', null)).toBe(4301);
    expect(closeCodeFor('lifetime', null)).toBe(4302);
    expect(closeCodeFor('reattach_grace', null)).toBe(4303);
  });
});
