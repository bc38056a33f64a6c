// The local control plane's certificates (one CA; the apiserver's, the admin's and the real node's) and its
// kubeconfigs. Kept in `<dir>/pki` and reused by a restarted cluster.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NODE } from './node/network.ts';

const run = promisify(execFile);

// One openssl config for every certificate; the `-extensions` section picks the profile.
const OPENSSL_CNF = `[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,IP:10.245.0.1,DNS:boxyard-node,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
`;

/** CA, apiserver serving cert, admin client cert (system:masters) and the service-account key pair (P-256: fast). */
export async function makePki(pki: string): Promise<void> {
  if (existsSync(join(pki, PKI_DONE))) return; // reuse: a restarted cluster keeps its identity
  await mkdir(pki, { recursive: true });
  const cnf = join(pki, 'openssl.cnf');
  await writeFile(cnf, OPENSSL_CNF);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '3650'];
  const cert = (name: string, profile: string, subject: string, signed: boolean) =>
    run('openssl', [
      'req',
      '-x509',
      '-config',
      cnf,
      '-extensions',
      profile,
      ...ec,
      '-subj',
      subject,
      '-keyout',
      join(pki, `${name}.key`),
      '-out',
      join(pki, `${name}.crt`),
      ...(signed ? ['-CA', join(pki, 'ca.crt'), '-CAkey', join(pki, 'ca.key')] : []),
    ]);
  await cert('ca', 'ca', '/CN=boxyard-local-ca', false);
  await Promise.all([
    cert('apiserver', 'server', '/CN=kube-apiserver', true),
    cert('admin', 'client', '/O=system:masters/CN=boxyard-admin', true),
    // The real node: the kubelet's client (Node authorizer) and serving certificates, kube-proxy's client, and the
    // apiserver's client for logs/exec/port-forward on the kubelet.
    cert('node', 'client', `/O=system:nodes/CN=system:node:${NODE.name}`, true),
    cert('kubelet', 'server', `/CN=${NODE.name}`, true),
    cert('kube-proxy', 'client', '/CN=system:kube-proxy', true),
    cert('apiserver-kubelet-client', 'client', '/O=system:masters/CN=kube-apiserver-kubelet-client', true),
    run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', join(pki, 'sa.key')]).then(() =>
      run('openssl', ['pkey', '-in', join(pki, 'sa.key'), '-pubout', '-out', join(pki, 'sa.pub')]),
    ),
  ]);
  await writeFile(join(pki, PKI_DONE), '');
}
/** Bumped when the set of certificates changes: an older cluster directory gets a new PKI. */
const PKI_DONE = 'done-2';

export function kubeconfigYaml(server: string, pki: string, user = 'admin'): string {
  const b64 = (f: string) => readFileSync(join(pki, f)).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
- name: boxyard-local
  cluster:
    server: ${server}
    certificate-authority-data: ${b64('ca.crt')}
users:
- name: boxyard-admin
  user:
    client-certificate-data: ${b64(`${user}.crt`)}
    client-key-data: ${b64(`${user}.key`)}
contexts:
- name: boxyard-local
  context:
    cluster: boxyard-local
    user: boxyard-admin
current-context: boxyard-local
`;
}
