// The CRDs: the generated files are the ones in crds/ and in the chart, and the real apiserver accepts them,
// fills in their defaults and enforces their CEL rules (immutable fields, cross-field checks).
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { kinds } from '@boxyard/registry/kinds.ts';
import { backupKinds } from '../backups/crds.ts';
import { kubectl, repoRoot } from '../../test/support.ts';
import { specTypesFile } from './generate.ts';
import { renderCrds } from './render.ts';
import { renderSpecTypes } from './spec-types.ts';
import { ignoreError } from '@boxyard/kit';

const crdFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();

describe('CRD files', () => {
  it('crds/ holds exactly what definitions.ts generates (run `node operator/src/crds/generate.ts` after a change)', () => {
    const generated = renderCrds();
    expect(crdFiles(join(repoRoot, 'crds'))).toEqual(generated.map((c) => c.file).sort());
    for (const { file, text } of generated) expect(readFileSync(join(repoRoot, 'crds', file), 'utf8'), file).toBe(text);
  });

  it('generated-types.ts holds exactly the spec types the schemas give (run `node operator/src/crds/generate.ts` after a change)', async () => {
    expect(readFileSync(specTypesFile, 'utf8')).toBe(await renderSpecTypes());
  });

  it('has one CRD per kind of the registry, and the backup kinds', () => {
    expect(
      renderCrds()
        .map((c) => c.file)
        .sort(),
    ).toEqual([...kinds, ...backupKinds].map((k) => `boxyard.io_${k.plural}.yaml`).sort());
  });

  it('the chart ships byte-identical copies of crds/ (helm reads only files inside the chart)', () => {
    const chartCrds = join(repoRoot, 'charts', 'boxyard', 'crds');
    expect(crdFiles(chartCrds)).toEqual(crdFiles(join(repoRoot, 'crds')));
    for (const file of crdFiles(chartCrds)) expect(readFileSync(join(chartCrds, file), 'utf8'), file).toBe(readFileSync(join(repoRoot, 'crds', file), 'utf8'));
  });

  it('has one example per kind, referencing the Secrets db and s3', () => {
    const examples = readdirSync(join(repoRoot, 'crds', 'examples')).sort();
    expect(examples).toEqual(['box-repository.yaml', 'file-share.yaml', 'terminal-pool.yaml']);
    for (const file of examples) {
      const spec = parse(readFileSync(join(repoRoot, 'crds', 'examples', file), 'utf8')).spec;
      expect(spec.database.secretRef.name).toBe('db');
      if (spec.storage) expect(spec.storage.credentialsSecretRef.name).toBe('s3');
    }
  });
});

describe('CRDs on the apiserver', () => {
  const kubeconfig = inject('kubeconfig');
  const namespace = `crds-${randomBytes(4).toString('hex')}`;
  const example = (file: string) => parse(readFileSync(join(repoRoot, 'crds', 'examples', file), 'utf8'));
  const apply = (manifest: unknown, extra: string[] = []) => kubectl(kubeconfig, ['apply', '-n', namespace, ...extra, '-f', '-'], stringify(manifest));
  const refusal = (manifest: unknown) =>
    apply(manifest).then(
      () => 'accepted',
      (error: Error) => error.message,
    );

  beforeAll(async () => {
    await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
    await kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', ...kinds.map((k) => `crd/${k.plural}.boxyard.io`)]);
    await kubectl(kubeconfig, ['create', 'namespace', namespace]);
  });
  afterAll(async () => {
    await kubectl(kubeconfig, ['delete', 'namespace', namespace, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
  });

  it('accepts the examples and fills in the defaults', async () => {
    for (const file of ['box-repository.yaml', 'file-share.yaml', 'terminal-pool.yaml']) {
      const stored = JSON.parse(await apply(example(file), ['--dry-run=server', '-o', 'json']));
      expect(stored.spec.deletionPolicy, file).toMatch(/^(Retain|Delete)$/);
      // The services' own defaults: the box repository's seed says 1000 per 15 minutes (and names four class
      // ceilings), the file share's and the terminal's 100 per 10 minutes (the file-share example sets 300).
      const limits =
        file === 'box-repository.yaml'
          ? {
              maxRequests: 1000,
              windowSeconds: 900,
              fileOperationsMaxRequests: 100,
              downloadMaxRequests: 1000,
              downloadLinkMaxRequests: 300,
              architectureOperationsMaxRequests: 300,
            }
          : { maxRequests: file === 'file-share.yaml' ? 300 : 100, windowSeconds: 600 };
      expect(stored.spec.rateLimiting, file).toEqual({ enabled: true, ...limits });
      expect(stored.spec.auth, file).toMatchObject({ adminUsername: 'admin', sessionTTLSeconds: 3600 });
      expect(stored.spec.networkPolicy.enabled, file).toBe(true);
    }
    const box = JSON.parse(await apply(example('box-repository.yaml'), ['--dry-run=server', '-o', 'json']));
    expect(box.spec.database).toEqual({ secretRef: { name: 'db', key: 'url' }, schema: 'box_repository', poolSize: 10 });
    expect(box.spec.storage).toMatchObject({
      region: 'us-east-1',
      prefix: '',
      createBucket: true,
      credentialsSecretRef: { accessKeyKey: 'accessKey', secretKeyKey: 'secretKey' },
    });
    expect(box.spec.downloadLinks.ttlSeconds).toBe(300);
    const pool = JSON.parse(await apply(example('terminal-pool.yaml'), ['--dry-run=server', '-o', 'json']));
    expect(pool.spec.sessions).toMatchObject({ reattachGraceSeconds: 300, globalLimit: 100, scrollbackBytes: 1048576 });
    expect(pool.spec.database.schema).toBe('terminal');
  });

  it('refuses invalid specs with messages that name the rule', async () => {
    const box = example('box-repository.yaml');
    expect(await refusal({ ...box, spec: { ...box.spec, ingress: { className: 'nginx', tls: { secretName: 'x' } } } })).toMatch(
      /ingress\.tls requires ingress\.host/,
    );
    expect(await refusal({ ...box, spec: { ...box.spec, storage: { ...box.spec.storage, bucket: 'Not_A_Bucket' } } })).toMatch(/spec\.storage\.bucket/);
    expect(await refusal({ ...box, spec: { ...box.spec, storage: { ...box.spec.storage, endpoint: 'minio:9000' } } })).toMatch(/spec\.storage\.endpoint/);
    expect(await refusal({ ...box, spec: { ...box.spec, deletionPolicy: 'Destroy' } })).toMatch(/deletionPolicy/);
    // A name the service refuses would crash-loop its pods: the apiserver refuses it first.
    expect(await refusal({ ...box, spec: { ...box.spec, auth: { adminUsername: 'ops admin' } } })).toMatch(/spec\.auth\.adminUsername/);
    const { storage: _storage, ...noStorage } = box.spec;
    expect(await refusal({ ...box, spec: noStorage })).toMatch(/spec\.storage: Required value/);
    expect(await refusal({ ...box, metadata: { name: 'a-name-that-is-far-too-long-for-the-children-names' } })).toMatch(/at most 40 characters/);
    const pool = example('terminal-pool.yaml');
    expect(await refusal({ ...pool, spec: { ...pool.spec, sessions: { idleTimeoutSeconds: 3600, maxLifetimeSeconds: 600 } } })).toMatch(
      /maxLifetimeSeconds must not be shorter than sessions\.idleTimeoutSeconds/,
    );
    expect(await refusal({ ...pool, spec: { ...pool.spec, sessions: { perUserLimit: 5, globalLimit: 2 } } })).toMatch(
      /perUserLimit must not exceed sessions\.globalLimit/,
    );
  });

  it('keeps the bucket, the prefix and the database schema immutable', async () => {
    const share = example('file-share.yaml');
    await apply(share);
    const change = (patch: unknown) =>
      kubectl(kubeconfig, ['patch', 'fileshare', 'files', '-n', namespace, '--type=merge', '-p', JSON.stringify({ spec: patch })]).then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(await change({ storage: { bucket: 'elsewhere' } })).toMatch(/storage\.bucket is immutable/);
    expect(await change({ storage: { prefix: 'team-b' } })).toMatch(/storage\.prefix is immutable/);
    expect(await change({ database: { schema: 'other' } })).toMatch(/database\.schema is immutable/);
    expect(await change({ replicas: 3, uploads: { maxBytes: 1024 } })).toBe('accepted'); // the rest may change
  });
});
