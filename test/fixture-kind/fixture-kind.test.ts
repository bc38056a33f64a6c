// Proof of the service contract (issue 28, item 4): a fixture service kind declared in this one folder (a route
// and a table) is served by `boxyard dev`, backed up by `boxyard backup`, and its kind reconciled by the operator on
// the real apiserver — with nothing outside this folder naming it. The last test lists the lines elsewhere that do.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { crdFor, kindDefinition } from '@boxyard/operator/crds/definitions.ts';
import { loadAsPod } from '@boxyard/operator/desired/pod-config.ts';
import { startOperatorProcess, waitFor, type OperatorProcess } from '@boxyard/operator/test/support.ts';
import { kubectlFor } from '../harness/clients.ts';
import { makeHome, startDevProcess, type DevProcess } from '../harness/dev-process.ts';
import { createTestDatabase } from '../harness/fixtures.ts';
import { NAME, notesConfigSchema } from './config.ts';
import { clusterKind } from './kind.ts';
import { ignoreError } from '@boxyard/kit';

type Json = Record<string, any>;

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAIN = join(ROOT, 'services/boxyard/src/main.ts');
const extra = { BOXYARD_EXTRA_SERVICES: join(HERE, 'service.ts') };

async function boxyard(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, output };
}

describe('a fixture kind declared in one folder, on one machine', () => {
  let dev: DevProcess;
  let home: string;
  beforeAll(async () => {
    home = await makeHome('boxyard-fixture-kind-');
    dev = await startDevProcess({ home, env: { ...extra, BOXYARD_RATE_LIMITING__ENABLED: 'false' } });
  }, 120_000);
  afterAll(async () => {
    await dev?.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('boxyard dev serves it beside the others: its route, its table, its limit from config', async () => {
    const base = dev.urls[NAME]!;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const written = await fetch(`${base}/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'first note' }),
    });
    expect(written.status).toBe(201);
    expect(await written.json()).toMatchObject({ text: 'first note' });
    const tooLong = await fetch(`${base}/notes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(281) }),
    });
    expect(tooLong.status).toBe(422);
    expect(tooLong.headers.get('content-type')).toContain('application/problem+json');
    expect(await (await fetch(`${base}/notes`)).json()).toEqual([expect.objectContaining({ text: 'first note' })]);
    // The host's common parts came with the declaration: health, OpenAPI and /metrics on its own listener.
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);
    expect(await (await fetch(dev.metricsUrls[NAME]!)).text()).toContain(`service="${NAME}"`);
  });

  it('boxyard backup backs up its table', async () => {
    const target = join(home, 'backup');
    const result = await boxyard(['backup', target], { ...extra, BOXYARD_HOME: home, BOXYARD_DEV_POSTGRES_PORT: String(dev.postgresPort) });
    expect(result.code, result.output).toBe(0);
    const manifest = JSON.parse(await readFile(join(target, 'manifest.json'), 'utf8')) as {
      services: Record<string, { tables: { name: string; rows: number; file: string }[] }>;
    };
    const notes = manifest.services[NAME]?.tables.find((t) => t.name === 'notes');
    expect(notes?.rows).toBe(1);
    expect(await readFile(join(target, notes!.file), 'utf8')).toContain('first note');
  });
});

describe('its kind, reconciled by the operator on the real apiserver', () => {
  const kubeconfig = inject('kubeconfig');
  const namespace = `fixture-kind-${randomBytes(3).toString('hex')}`;
  let operator: OperatorProcess | undefined;
  let logDir: string;
  const kubectl = (args: string[], stdin?: string) => kubectlFor(kubeconfig)(args, stdin);
  beforeAll(async () => {
    logDir = await mkdtemp(join(tmpdir(), 'fixture-kind-'));
    const crd = crdFor(kindDefinition(clusterKind));
    await kubectl(['apply', '--server-side', '-f', '-'], stringify(crd));
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${clusterKind.plural}.boxyard.io`]);
    await kubectl(['create', 'namespace', namespace]);
    await kubectl(['create', 'secret', 'generic', 'db', '-n', namespace, `--from-literal=url=${await createTestDatabase('fixture_kind')}`]);
    // The registry of the operator process holds the fixture (BOXYARD_EXTRA_SERVICES), as `boxyard dev`'s did.
    process.env.BOXYARD_EXTRA_SERVICES = extra.BOXYARD_EXTRA_SERVICES;
    try {
      operator = await startOperatorProcess({
        kubeconfig,
        logFile: join(logDir, 'operator.log'),
        args: ['--namespaces', namespace, '--default-image', 'registry.invalid/boxyard:test'],
      });
    } finally {
      delete process.env.BOXYARD_EXTRA_SERVICES;
    }
  }, 120_000);
  afterAll(async () => {
    await operator?.stop();
    await kubectl(['delete', 'namespace', namespace, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
    if (logDir) await rm(logDir, { recursive: true, force: true });
  });

  it('a FixtureNotes resource becomes a Deployment running the service, with its spec in the service config', async () => {
    await kubectl(
      ['apply', '-n', namespace, '-f', '-'],
      stringify({
        apiVersion: 'boxyard.io/v1alpha1',
        kind: 'FixtureNotes',
        metadata: { name: 'board' },
        spec: { database: { secretRef: { name: 'db' } }, notes: { maxLength: 100 } },
      }),
    );
    const name = `board-${NAME}`;
    const deployment = await waitFor(
      'the Deployment',
      async () => (JSON.parse(await kubectl(['get', 'deployment', name, '-n', namespace, '-o', 'json']).catch(() => 'null')) as Json | null) ?? undefined,
    );
    expect(deployment.spec.template.spec.containers[0].args).toEqual(['serve', NAME, '--config', '/etc/boxyard/config.yaml']);
    const configMap = JSON.parse(await kubectl(['get', 'configmap', `${name}-config`, '-n', namespace, '-o', 'json'])) as { data: Record<string, string> };
    const config = parse(configMap.data['config.yaml']!) as Json;
    expect(config.notes).toEqual({ max_length: 100 });
    // The service's own schema loads what the operator rendered (the pod would not crash-loop).
    expect(loadAsPod(configMap.data['config.yaml']!, notesConfigSchema, logDir)).toMatchObject({
      notes: { max_length: 100 },
      database: { schema: 'fixture_notes' },
    });
    const status = await waitFor('the status at its generation', async () => {
      const resource = JSON.parse(await kubectl(['get', 'fixturenotes', 'board', '-n', namespace, '-o', 'json'])) as Json;
      return resource.status?.observedGeneration === resource.metadata.generation ? resource.status : undefined;
    });
    expect(status.conditions.map((c: { type: string }) => c.type)).toContain('Ready');
  });

  it('refuses a spec its service would refuse, at the apiserver (the bounds came from config.ts)', async () => {
    const refused = kubectl(
      ['apply', '-n', namespace, '-f', '-'],
      stringify({
        apiVersion: 'boxyard.io/v1alpha1',
        kind: 'FixtureNotes',
        metadata: { name: 'too-long' },
        spec: { database: { secretRef: { name: 'db' } }, notes: { maxLength: 20_000 } },
      }),
    );
    await expect(refused).rejects.toThrow(/spec\.notes\.maxLength: Invalid value: 20000/);
  });
});

describe('what adding it took', () => {
  it('lists the lines outside its folder that name it: at most 3', async () => {
    const lines: string[] = [];
    for (const entry of await readdir(ROOT, { withFileTypes: true, recursive: true })) {
      const file = join(entry.parentPath, entry.name);
      const path = relative(ROOT, file);
      if (!entry.isFile() || path.startsWith(relative(ROOT, HERE)) || /(^|\/)(node_modules|\.git|\.boxyard|test-results)(\/|$)/.test(path)) continue;
      // Code and configuration: what registers a service (documents that mention the folder register nothing).
      if (!/\.(ts|json|ya?ml|sh|sql|tpl)$|^Makefile$|^Dockerfile$/.test(entry.name)) continue;
      const text = await readFile(file, 'utf8');
      text.split('\n').forEach((line, index) => {
        if (line.includes('fixture-kind') || line.includes(NAME)) lines.push(`${path}:${index + 1}: ${line.trim()}`);
      });
    }
    console.log(`[fixture kind] lines outside test/fixture-kind that name it (${lines.length}):\n${lines.join('\n')}`);
    expect(lines.length).toBeLessThanOrEqual(3);
  });
});
