// The runtime settings of the Boxyard image as test/image/build-image.sh writes them into the image config.
// The Dockerfile says the same things in its own syntax; image-layout.test.ts checks that the two agree.
//   node test/image/image-spec.ts config [sha256:<diff_id> ...]   prints the image config JSON (one line)
// The config's bytes are hashed into the image ID, so the output is canonical: fixed key order, no whitespace.

export const imageSpec = {
  user: '10001:10001',
  entrypoint: ['boxyard'],
  cmd: ['--help'],
  workingDir: '/app',
  env: {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    NODE_ENV: 'production',
    // The root filesystem is read-only in pods; /tmp is the one writable place (an emptyDir).
    HOME: '/tmp',
  },
  // box-repository, file-share, terminal, operator metrics
  exposedPorts: [3000, 3001, 3002, 8080],
  labels: {
    'org.opencontainers.image.title': 'boxyard',
    'org.opencontainers.image.description': 'Boxyard operator and services: Vagrant box repository, file share, cloud terminals',
    'org.opencontainers.image.licenses': 'Apache-2.0',
  },
} as const;

export interface ImageConfig {
  architecture: 'amd64';
  os: 'linux';
  created: string;
  config: {
    User: string;
    Env: string[];
    Entrypoint: string[];
    Cmd: string[];
    WorkingDir: string;
    ExposedPorts: Record<string, Record<string, never>>;
    Labels: Record<string, string>;
  };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history: { created: string; created_by: string; comment?: string }[];
}

/** The image config for these layers (diff_id = sha256 of the uncompressed layer tar), base layer first. */
export function imageConfig(diffIds: string[], options: { created?: string; history?: string[] } = {}): ImageConfig {
  const created = options.created ?? new Date(0).toISOString().replace('.000Z', 'Z');
  return {
    architecture: 'amd64',
    os: 'linux',
    created,
    config: {
      User: imageSpec.user,
      Env: Object.entries(imageSpec.env).map(([name, value]) => `${name}=${value}`),
      Entrypoint: [...imageSpec.entrypoint],
      Cmd: [...imageSpec.cmd],
      WorkingDir: imageSpec.workingDir,
      ExposedPorts: Object.fromEntries(imageSpec.exposedPorts.map((port) => [`${port}/tcp`, {}])),
      Labels: { ...imageSpec.labels },
    },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: (options.history ?? []).map((createdBy) => ({ created, created_by: createdBy })),
  };
}

if (import.meta.main) {
  const [command, ...args] = process.argv.slice(2);
  if (command !== 'config' || args.some((id) => !/^sha256:[0-9a-f]{64}$/.test(id))) {
    console.error('usage: node test/image/image-spec.ts config [sha256:<diff_id> ...]');
    process.exit(2);
  }
  const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? 0);
  const history = process.env.IMAGE_HISTORY ? process.env.IMAGE_HISTORY.split('\n') : [];
  const created = new Date(epoch * 1000).toISOString().replace('.000Z', 'Z');
  process.stdout.write(`${JSON.stringify(imageConfig(args, { created, history }))}\n`);
}
