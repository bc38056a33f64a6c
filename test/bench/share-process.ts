// The file share as users run it, for the benches: `boxyard serve file-share --config <file>` in its own process,
// with the launchers' V8 flags and malloc settings (launcher.ts). A share started inside the bench process would
// run with Node's defaults instead (e.g. a full mark-compact per 64 MiB of socket reads: ~1 CPU-s per GiB uploaded).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { LAUNCHER_ENV, launcherNodeFlags } from './launcher.ts';

const main = fileURLToPath(new URL('../../services/boxyard/src/main.ts', import.meta.url));

export interface ShareProcess {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the share with `config` (its server's host and port are set here) and waits until /health answers. */
export async function startShareProcess(dir: string, config: Record<string, unknown>): Promise<ShareProcess> {
  const port = await freePort();
  const configFile = join(dir, `file-share-${port}.json`);
  const server = { ...(config.server as object | undefined), host: '127.0.0.1', port };
  await writeFile(configFile, JSON.stringify({ ...config, server }), { mode: 0o600 });
  const child = spawn(process.execPath, [...launcherNodeFlags(), main, 'serve', 'file-share', '--config', configFile], {
    env: { ...process.env, ...LAUNCHER_ENV },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  };
  for (;;) {
    if (child.exitCode !== null) throw new Error(`boxyard serve file-share exited with ${child.exitCode}`);
    const up = await fetch(`${url}/health`).then(
      (response) => response.ok,
      () => false,
    );
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { url, pid: child.pid!, stop };
}
