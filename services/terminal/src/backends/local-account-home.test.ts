// A root server's per-user OS account gets its home at a predictable path (`<home_base>/<prefix><12 hex of the user
// id>`). Where someone else can write in home_base (a world-writable directory configured there), they can put a
// symlink at that path first; making the home the account's own must then not follow it (as root: chown a
// directory of their choice to the new account, e.g. /etc). The account's home is refused instead, the target
// unchanged (issue 27).
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, lchownSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTestAccounts } from '../testing/test-gateway.ts';
import { accountNameFor, createAccountResolver } from './local-accounts.ts';

const root = process.getuid?.() === 0;

describe.skipIf(!root)('local accounts: the home of a created account', () => {
  const prefix = `bxh${randomBytes(3).toString('hex')}-`;
  const homeBase = mkdtempSync('/var/tmp/boxyard-open-homes-');
  const victim = mkdtempSync('/var/tmp/boxyard-home-victim-');
  afterAll(() => {
    removeTestAccounts(prefix, homeBase);
    rmSync(victim, { recursive: true, force: true });
  });

  it("a symlink planted at the account's home path is refused, and what it points at keeps its owner and mode", async () => {
    chmodSync(homeBase, 0o1777); // writable by everyone, as /tmp
    chmodSync(victim, 0o755);
    writeFileSync(join(victim, 'keep'), 'x');
    const nobody = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }));
    const userId = randomUUID();
    const planted = join(homeBase, accountNameFor(prefix, userId));
    symlinkSync(victim, planted);
    lchownSync(planted, nobody, nobody);

    const resolver = createAccountResolver(
      { prefix, home_base: homeBase, map: {} },
      { canSwitch: true, canCreate: true, self: { name: 'root', uid: 0 } },
      '/bin/sh',
    );
    const outcome = await resolver.accountFor({ id: userId, username: 'mallory' }).then(
      (account) => `accepted: ${account.name}`,
      (error: unknown) => (error as Error).message,
    );

    const after = statSync(victim);
    expect({ uid: after.uid, gid: after.gid, mode: after.mode & 0o7777 }).toEqual({ uid: 0, gid: 0, mode: 0o755 });
    expect(outcome).toMatch(/home directory .* is a symbolic link/);
  });
});
