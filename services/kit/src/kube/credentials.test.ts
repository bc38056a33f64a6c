import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inClusterCredentials, kubeconfigCredentials, loadCredentials } from './credentials.ts';

const dir = mkdtempSync(join(tmpdir(), 'credentials-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, cluster: string, user: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
current-context: here
contexts:
- name: here
  context: { cluster: c, user: u, namespace: team }
- name: elsewhere
  context: { cluster: other, user: u }
clusters:
- name: c
  cluster:
${cluster}
- name: other
  cluster: { server: https://other.example }
users:
- name: u
  user:
${user}
`,
  );
  return file;
}

describe('credentials from a kubeconfig', () => {
  it('reads certificates from files relative to the kubeconfig, and impersonation', async () => {
    writeFileSync(join(dir, 'ca.crt'), 'CA');
    writeFileSync(join(dir, 'client.crt'), 'CERT');
    const file = kubeconfig(
      'files.yaml',
      '    server: https://127.0.0.1:6443\n    certificate-authority: ca.crt\n    tls-server-name: kubernetes',
      `    client-certificate: client.crt\n    client-key-data: ${Buffer.from('KEY').toString('base64')}\n    as: system:serviceaccount:boxyard-system:boxyard`,
    );
    const credentials = kubeconfigCredentials(file);
    expect(credentials.server).toBe('https://127.0.0.1:6443');
    expect(credentials.namespace).toBe('team');
    expect({
      ca: credentials.tls.ca?.toString(),
      cert: credentials.tls.cert?.toString(),
      key: credentials.tls.key?.toString(),
      servername: credentials.tls.servername,
    }).toEqual({ ca: 'CA', cert: 'CERT', key: 'KEY', servername: 'kubernetes' });
    expect(await credentials.headers()).toEqual({ 'Impersonate-User': 'system:serviceaccount:boxyard-system:boxyard' });
  });

  it('sends a bearer token, from the kubeconfig or a token file', async () => {
    expect(await kubeconfigCredentials(kubeconfig('token.yaml', '    server: https://k', '    token: abc')).headers()).toEqual({ Authorization: 'Bearer abc' });
    writeFileSync(join(dir, 'token'), 'from-file\n');
    expect(
      await kubeconfigCredentials(kubeconfig('tokenfile.yaml', '    server: https://k\n    insecure-skip-tls-verify: true', '    tokenFile: token')).headers(),
    ).toEqual({ Authorization: 'Bearer from-file' });
    expect(kubeconfigCredentials(join(dir, 'tokenfile.yaml')).tls.rejectUnauthorized).toBe(false);
  });

  it('names what is missing', async () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: Config\ncurrent-context: nowhere\ncontexts: []\n');
    expect(() => kubeconfigCredentials(file)).toThrow(/no context named "nowhere"/);
    expect(() => loadCredentials(undefined, { KUBECONFIG: join(dir, 'absent.yaml') })).toThrow(/absent\.yaml/);
  });

  it('runs an exec plugin for its token, again only once the token has expired, with its env and KUBERNETES_EXEC_INFO', async () => {
    // A plugin as the clouds ship them: a program that prints an ExecCredential. This one counts its runs.
    const plugin = join(dir, 'plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh
echo run >> "${dir}/runs"
expiry=$(date -u -d "@$(( $(date +%s) + $PLUGIN_SECONDS ))" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s-%s","expirationTimestamp":"%s"}}' "$PLUGIN_PREFIX" "$(printf %s "$KUBERNETES_EXEC_INFO" | grep -c ExecCredential)" "$expiry"
`,
      { mode: 0o755 },
    );
    const runs = () => readFileSync(join(dir, 'runs'), 'utf8').split('\n').filter(Boolean).length;
    const execUser = (seconds: number) =>
      `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      env:\n      - { name: PLUGIN_PREFIX, value: cloud }\n      - { name: PLUGIN_SECONDS, value: "${seconds}" }`;
    const fresh = kubeconfigCredentials(kubeconfig('exec.yaml', '    server: https://k', execUser(3600)));
    const [first, second] = await Promise.all([fresh.headers(), fresh.headers()]);
    expect(first).toEqual({ Authorization: 'Bearer cloud-1' });
    expect(second).toEqual(first);
    expect(await fresh.headers()).toEqual(first);
    expect(runs()).toBe(1);
    // A token that expires within the minute is fetched anew for each request.
    const expiring = kubeconfigCredentials(kubeconfig('expiring.yaml', '    server: https://k', execUser(30)));
    await expiring.headers();
    await expiring.headers();
    expect(runs()).toBe(3);
  });

  it('tells an exec plugin with provideClusterInfo the cluster, as kubectl does, and only then', async () => {
    const plugin = join(dir, 'cluster-plugin.sh');
    writeFileSync(
      plugin,
      `#!/bin/sh
printf %s "$KUBERNETES_EXEC_INFO" > "${dir}/exec-info-$PLUGIN_NAME.json"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'
`,
      { mode: 0o755 },
    );
    const cluster = [
      '    server: https://10.0.0.1:6443',
      '    tls-server-name: kubernetes',
      `    certificate-authority-data: ${Buffer.from('CA').toString('base64')}`,
      '    extensions:',
      '    - name: client.authentication.k8s.io/exec',
      '      extension: { audience: boxyard, region: eu-1 }',
      '    - name: other',
      '      extension: { ignored: true }',
    ].join('\n');
    const user = (name: string, provide: boolean) =>
      `    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./cluster-plugin.sh\n      provideClusterInfo: ${provide}\n      env:\n      - { name: PLUGIN_NAME, value: ${name} }`;
    await kubeconfigCredentials(kubeconfig('cluster-info.yaml', cluster, user('with', true))).headers();
    await kubeconfigCredentials(kubeconfig('no-cluster-info.yaml', cluster, user('without', false))).headers();
    const info = (name: string) => JSON.parse(readFileSync(join(dir, `exec-info-${name}.json`), 'utf8'));
    expect(info('with')).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://10.0.0.1:6443',
          'tls-server-name': 'kubernetes',
          'certificate-authority-data': Buffer.from('CA').toString('base64'),
          config: { audience: 'boxyard', region: 'eu-1' },
        },
      },
    });
    expect(info('without').spec).toEqual({ interactive: false });
  });

  it('refuses a plugin that must ask a person, and names the install hint of a missing one', async () => {
    expect(() =>
      kubeconfigCredentials(kubeconfig('interactive.yaml', '    server: https://k', '    exec:\n      command: kubelogin\n      interactiveMode: Always')),
    ).toThrow(/needs a person to answer it \(interactiveMode: Always\)/);
    const missing = kubeconfigCredentials(
      kubeconfig(
        'missing.yaml',
        '    server: https://k',
        '    exec:\n      command: no-such-login-plugin\n      installHint: Install it with apt-get install no-such',
      ),
    );
    await expect(missing.headers()).rejects.toThrow(/exec plugin no-such-login-plugin failed: .*ENOENT.*\nInstall it with apt-get install no-such/s);
  });

  it('names a failing exec plugin, and refuses auth-provider plugins', async () => {
    const failing = kubeconfigCredentials(kubeconfig('failing.yaml', '    server: https://k', '    exec:\n      command: /bin/false'));
    await expect(failing.headers()).rejects.toThrow(/exec plugin \/bin\/false failed/);
    expect(() => kubeconfigCredentials(kubeconfig('provider.yaml', '    server: https://k', '    auth-provider:\n      name: gcp'))).toThrow(
      /auth-provider plugins are not supported; use an exec plugin/,
    );
  });
});

describe('in-cluster credentials', () => {
  it('use the mounted service account token, CA and namespace', async () => {
    const root = mkdtempSync(join(dir, 'sa-'));
    writeFileSync(join(root, 'token'), 'sa-token');
    writeFileSync(join(root, 'ca.crt'), 'CLUSTER-CA');
    writeFileSync(join(root, 'namespace'), 'boxyard-system');
    const credentials = inClusterCredentials(root, { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' });
    expect(credentials.server).toBe('https://[fd00::1]:443');
    expect(credentials.namespace).toBe('boxyard-system');
    expect(credentials.tls.ca?.toString()).toBe('CLUSTER-CA');
    expect(await credentials.headers()).toEqual({ Authorization: 'Bearer sa-token' });
  });
});
