// Dynamic volumes on the real node: rancher's local-path-provisioner (built from its Go module, run as a local
// process with the admin kubeconfig) behind the default StorageClass `local-path`. A claim is bound once a pod uses
// it (WaitForFirstConsumer); the provisioner then makes its directory under <node dir>/local-path through a helper
// pod. No registry is reachable and the upstream helper (busybox's sh) is not here, so the helper pod's image is
// made like the pause image: one static binary, `/volume-helper`, that the provisioner runs as both its setup and
// teardown command (config setupCommand/teardownCommand), creating (0777, so any pod's uid may write) or removing
// the volume's directory.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tool } from '../tools.ts';
import type { NodeContext } from './node.ts';

const run = promisify(execFile);

/** The helper: `-a create` makes $VOL_DIR (0777), `-a delete` removes it with everything in it. */
const SOURCE = `#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
static int removeOne(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}
int main(int argc, char **argv) {
  const char *dir = getenv("VOL_DIR");
  const char *action = "";
  for (int i = 1; i + 1 < argc; i++) if (strcmp(argv[i], "-a") == 0) action = argv[i + 1];
  if (!dir || dir[0] != '/') { fprintf(stderr, "VOL_DIR must be an absolute path\\n"); return 2; }
  if (strcmp(action, "create") == 0) {
    if (mkdir(dir, 0777) != 0) { perror(dir); return 1; }
    return chmod(dir, 0777) == 0 ? 0 : 1;
  }
  if (strcmp(action, "delete") == 0) return nftw(dir, removeOne, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : 1;
  fprintf(stderr, "unknown action %s\\n", action);
  return 2;
}
`;

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

export const VOLUME_HELPER_IMAGE = `boxyard.local/volume-helper:${sha256(SOURCE).slice(0, 12)}`;
export const STORAGE_CLASS = 'local-path';
const NAMESPACE = 'local-path-storage';
const SERVICE_ACCOUNT = 'local-path-provisioner';

/** The helper image's docker-archive, built once per source version under $BOXYARD_CACHE/images. */
export async function volumeHelperArchive(): Promise<string> {
  const cache = join(process.env.BOXYARD_CACHE ?? join(process.env.HOME ?? '/root', '.cache', 'boxyard'), 'images');
  const archive = join(cache, `volume-helper-${sha256(SOURCE).slice(0, 12)}.tar`);
  if (existsSync(archive)) return archive;
  await mkdir(cache, { recursive: true });
  const work = await mkdtemp(join(tmpdir(), 'volume-helper-'));
  try {
    await mkdir(join(work, 'rootfs'));
    await writeFile(join(work, 'helper.c'), SOURCE);
    await run('gcc', ['-static', '-Os', '-s', '-o', join(work, 'rootfs', 'volume-helper'), join(work, 'helper.c')]);
    const tarFlags = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner'];
    await run('tar', [...tarFlags, '-cf', join(work, 'layer.tar'), '-C', join(work, 'rootfs'), 'volume-helper']);
    const diffId = `sha256:${sha256(readFileSync(join(work, 'layer.tar')))}`;
    const config = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      config: { Entrypoint: ['/volume-helper'] },
      rootfs: { type: 'layers', diff_ids: [diffId] },
    });
    const configName = `${sha256(config)}.json`;
    await writeFile(join(work, configName), config);
    await writeFile(join(work, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [VOLUME_HELPER_IMAGE], Layers: ['layer.tar'] }]));
    await run('tar', [...tarFlags, '-cf', `${archive}.tmp`, '-C', work, 'manifest.json', configName, 'layer.tar']);
    await rename(`${archive}.tmp`, archive);
    return archive;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const objects = (config: string) => `apiVersion: v1
kind: Namespace
metadata: { name: ${NAMESPACE} }
---
apiVersion: v1
kind: ServiceAccount
metadata: { name: ${SERVICE_ACCOUNT}, namespace: ${NAMESPACE} }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: local-path-config, namespace: ${NAMESPACE} }
data:
  config.json: '${config}'
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: ${STORAGE_CLASS}
  annotations: { storageclass.kubernetes.io/is-default-class: "true" }
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
`;

/** Starts the provisioner (the node is Ready); returns its line for the cluster's description. */
export async function startLocalPathProvisioner(
  ctx: NodeContext,
  nodeDir: string,
  adminKubeconfig: string,
  importImage: (archive: string) => Promise<void>,
): Promise<[string, string, string, string]> {
  await importImage(await volumeHelperArchive());
  const volumes = join(nodeDir, 'local-path');
  await mkdir(volumes, { recursive: true });
  const config = JSON.stringify({
    nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [volumes] }],
    setupCommand: '/volume-helper',
    teardownCommand: '/volume-helper',
  });
  const configFile = join(nodeDir, 'local-path.json');
  const helperPodFile = join(nodeDir, 'local-path-helper-pod.yaml');
  await writeFile(configFile, config);
  await writeFile(
    helperPodFile,
    `apiVersion: v1\nkind: Pod\nmetadata: { name: helper-pod }\nspec:\n  containers:\n    - { name: helper-pod, image: "${VOLUME_HELPER_IMAGE}", imagePullPolicy: Never }\n`,
  );
  await ctx.kubectl(['apply', '-f', '-'], objects(config));
  const binary = tool('LOCAL_PATH_PROVISIONER');
  ctx.start('local-path-provisioner', binary, [
    'start',
    `--config=${configFile}`,
    `--kubeconfig=${adminKubeconfig}`,
    `--namespace=${NAMESPACE}`,
    `--service-account-name=${SERVICE_ACCOUNT}`,
    '--configmap-name=local-path-config',
    `--helper-image=${VOLUME_HELPER_IMAGE}`,
    `--helper-pod-file=${helperPodFile}`,
  ]);
  return ['local-path-provisioner', binary, `StorageClass ${STORAGE_CLASS} (default), volumes in ${volumes}`, binary.slice(binary.lastIndexOf('-') + 1)];
}
