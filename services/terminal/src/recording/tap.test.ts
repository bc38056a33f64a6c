// Recording from the user's own stream (recording/feed.ts): while a user is attached the recorder reads that
// stream, while nobody is the agent's observer stream; across attach, detach (output made meanwhile) and
// reattach (the scrollback replayed to the user) every output shows exactly once in the recording, in order,
// as do what was typed and a resize; the recorder's messages never reach the browser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { ADMIN_PASSWORD, api, login, openTerminal, plain, startTestGateway } from '../testing/test-gateway.ts';

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Event = [number, string, string];

const count = (text: string, word: string) => text.split(word).length - 1;

describe("recording from the user's stream, and from the observer while nobody is attached", () => {
  let gateway: Gateway;
  let dir: string;
  let events: Event[];
  let browserControls: { type: string }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'recordings-tap-'));
    gateway = await startTestGateway(await createTestDatabase('terminal_recording_tap'), {
      recording: { mode: 'on', flush_seconds: 0.2, input: true },
      storage: { driver: 'local', root: dir },
    });
    const cookie = await login(gateway.url, 'admin', ADMIN_PASSWORD);
    const started = await api(gateway.url, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'rec-tap' } });
    expect(started.status).toBe(200);
    const id = started.json.data.session.id;
    const path = started.json.data.websocket_path;

    const first = await openTerminal(gateway.url, path, { cookie });
    first.type('echo A$((1+1))B\r');
    await first.waitFor('A2B');
    first.control({ type: 'resize', cols: 101, rows: 31 });
    // Output made after the user left: only the observer stream can bring it.
    first.type('sleep 1; echo C$((2+1))D\r');
    await new Promise((r) => setTimeout(r, 200));
    await first.close();
    await new Promise((r) => setTimeout(r, 1500));

    const second = await openTerminal(gateway.url, path, { cookie });
    await second.waitFor('C3D'); // the scrollback replay: shown again to the user, not recorded again
    second.type('echo E$((3+1))F\r');
    await second.waitFor('E4F');
    await second.close();
    browserControls = [...first.controls, ...second.controls] as { type: string }[];

    await api(gateway.url, 'DELETE', `/api/terminal/sessions/${id}/stop`, { cookie });
    for (let i = 0; i < 100; i++) {
      const { json } = await api(gateway.url, 'GET', `/api/terminal/recordings/${id}`, { cookie });
      if (json.data?.recording && json.data.recording.state !== 'recording') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const cast = await fetch(`${gateway.url}/api/terminal/recordings/${id}/cast`, { headers: { cookie } });
    expect(cast.status).toBe(200);
    events = (await cast.text())
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Event);
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records each output once, in order, across detach and reattach', () => {
    const output = plain(
      events
        .filter(([, code]) => code === 'o')
        .map(([, , data]) => data)
        .join(''),
    );
    expect({ A2B: count(output, 'A2B'), C3D: count(output, 'C3D'), E4F: count(output, 'E4F') }).toEqual({ A2B: 1, C3D: 1, E4F: 1 });
    expect(output.indexOf('A2B')).toBeLessThan(output.indexOf('C3D'));
    expect(output.indexOf('C3D')).toBeLessThan(output.indexOf('E4F'));
    expect(events.filter(([, code]) => code === 'm').map(([, , text]) => text)).not.toContainEqual(expect.stringContaining('missing'));
  });

  it('records what was typed and the resize once each', () => {
    const typed = events
      .filter(([, code]) => code === 'i')
      .map(([, , data]) => data)
      .join('');
    expect(count(typed, 'echo A$((1+1))B')).toBe(1);
    expect(count(typed, 'echo E$((3+1))F')).toBe(1);
    expect(events.filter(([, code, data]) => code === 'r' && data === '101x31')).toHaveLength(1);
  });

  it("keeps the recorder's messages from the browser", () => {
    expect(browserControls.map((message) => message.type).filter((type) => ['recording', 'resize', 'input'].includes(type))).toEqual([]);
  });
});
