// The generated admin password is printed once, on the start that generates it; later starts say where it is
// kept and never print it again (issue 16). The real `boxyard dev`, started twice on one home.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeHome, startDevProcess, type DevProcess } from '../harness/dev-process.ts';

const signIn = (url: string, password: string) =>
  fetch(`${url}/api/auth/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  }).then((r) => r.status);

describe('boxyard dev admin password', () => {
  let home: string;
  let dev: DevProcess | undefined;
  afterAll(async () => {
    await dev?.stop({ discard: true });
  });

  it('is printed when generated, and only then', async () => {
    home = await makeHome();
    const env = { BOXYARD_ADMIN_PASSWORD: '' };
    dev = await startDevProcess({ home, env });
    const password = JSON.parse(await readFile(join(home, 'secrets.json'), 'utf8')).admin_password as string;
    const first = dev.output();
    expect(first).toContain(`password ${password} (generated now, shown once`);
    expect(await signIn(dev.urls['box-repository']!, password)).toBe(200);
    await dev.stop();

    dev = await startDevProcess({ home, env });
    expect(dev.output()).not.toContain(password);
    expect(dev.output()).toContain(`password kept in ${join(home, 'secrets.json')}`);
    expect(await signIn(dev.urls['box-repository']!, password)).toBe(200);
  }, 180_000);
});
