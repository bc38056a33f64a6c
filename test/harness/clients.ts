// The real clients the harness and the suites drive (the pinned kubectl and helm builds), and the image `make image`
// built last.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tool } from './tools.ts';

const run = promisify(execFile);

export interface Cli {
  (args: string[], stdin?: string): Promise<string>;
}

/** A CLI bound to one kubeconfig; failures carry stderr. */
export function cli(binary: string, kubeconfig: string): Cli {
  return async (args, stdin) => {
    const child = run(binary, [`--kubeconfig=${kubeconfig}`, ...args], { maxBuffer: 64 * 1024 * 1024 });
    if (stdin !== undefined) child.child.stdin?.end(stdin);
    try {
      return (await child).stdout;
    } catch (error) {
      const e = error as Error & { stderr?: string; stdout?: string };
      throw new Error(`${binary.split('/').pop()} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
    }
  };
}

export const kubectlFor = (kubeconfig: string) => cli(tool('KUBECTL'), kubeconfig);
export const helmFor = (kubeconfig: string) => cli(tool('HELM'), kubeconfig);

/** The image `make image` built last (IMAGE=..., TAR=... in $BOXYARD_CACHE/images/latest.env). */
export function builtImage(): { image: string; tar: string } {
  const cache = process.env.BOXYARD_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'boxyard');
  const file = join(cache, 'images', 'latest.env');
  if (!existsSync(file)) throw new Error(`no Boxyard image: run \`make image\` first (${file} is missing)`);
  const values = Object.fromEntries(
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split('=', 2) as [string, string]),
  );
  if (!values.IMAGE || !values.TAR || !existsSync(values.TAR)) throw new Error(`${file} names no image archive that exists: run \`make image\``);
  return { image: values.IMAGE, tar: values.TAR };
}
