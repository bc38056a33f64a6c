// Paths of the binaries test/tools/build-tools.sh builds (pinned versions, cached outside the checkout).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../tools/build-tools.sh', import.meta.url));

export type ToolName =
  | 'MINIO'
  | 'ETCD'
  | 'KUBE_APISERVER'
  | 'KUBE_CONTROLLER_MANAGER'
  | 'KUBE_SCHEDULER'
  | 'KUBECTL'
  | 'HELM'
  | 'KWOK'
  | 'KUBELET'
  | 'KUBE_PROXY'
  | 'COREDNS'
  | 'TRAEFIK'
  | 'OTELCOL'
  | 'LOCAL_PATH_PROVISIONER'
  | 'SEAWEEDFS';

let cached: Record<string, string> | undefined;

/** The path of a pinned tool; fails with the command that builds it when it is missing. */
export function tool(name: ToolName): string {
  cached ??= Object.fromEntries(
    execFileSync(script, ['--paths'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string]),
  );
  const path = cached[name];
  if (!path || !existsSync(path)) {
    throw new Error(`${name} is not built (${path}): run \`make tools\` (test/tools/build-tools.sh) first; it needs Go.`);
  }
  return path;
}
