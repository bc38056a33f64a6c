// The two ways to build the Boxyard image must give the same runtime: the Dockerfile (for a Docker engine) and
// test/image/build-image.sh (no engine; `make image`). Compares the Dockerfile's final stage with the config JSON
// the script writes (`build-image.sh --config`: no debootstrap, no layers), and both with what the operator and
// the terminal's pod backend assume. Fast: nothing is built.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RUN_AS_USER } from '@boxyard/operator/desired/common.ts';
import type { ImageConfig } from './image-spec.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const WRAPPER = 'services/boxyard/bin/boxyard';

interface Instruction {
  name: string;
  args: string;
}

/** The instructions of the Dockerfile's last stage, continuation lines joined, comments dropped. */
function finalStage(text: string): Instruction[] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const instructions = logical.map((line) => {
    const space = line.search(/\s/);
    const [name, args] = space === -1 ? [line, ''] : [line.slice(0, space), line.slice(space).trimStart()];
    return { name: name.toUpperCase(), args };
  });
  const lastFrom = instructions.map((i) => i.name).lastIndexOf('FROM');
  return instructions.slice(lastFrom + 1);
}

/** `KEY=value KEY2="quoted value"` pairs (ENV and LABEL). */
function pairs(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of args.matchAll(/(?<![^\s=])([^\s=]+)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    const value = match[2]!;
    out[match[1]!] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return out;
}

const stage = finalStage(readFileSync(join(root, 'Dockerfile'), 'utf8'));
const all = (name: string) => stage.filter((i) => i.name === name);
const last = (name: string) => all(name).at(-1)?.args;

const config = JSON.parse(
  execFileSync('bash', [join(root, 'test/image/build-image.sh'), '--config'], { encoding: 'utf8', env: { ...process.env, NODE: process.execPath } }),
) as ImageConfig;

describe('the image build-image.sh writes and the Dockerfile', () => {
  it('is a linux/amd64 image config with layers', () => {
    expect(config.architecture).toBe('amd64');
    expect(config.os).toBe('linux');
    expect(config.rootfs.type).toBe('layers');
  });

  it('run as the same user, the one the operator and the chart set', () => {
    expect(last('USER')).toBe(config.config.User);
    expect(config.config.User).toBe(`${RUN_AS_USER}:${RUN_AS_USER}`);
    const chart = readFileSync(join(root, 'charts/boxyard/templates/deployment.yaml'), 'utf8');
    expect(chart).toContain(`runAsUser: ${RUN_AS_USER}`);
    expect(chart).toContain(`runAsGroup: ${RUN_AS_USER}`);
  });

  it('have the same entrypoint, cmd and working directory', () => {
    expect(JSON.parse(last('ENTRYPOINT') ?? 'null')).toEqual(config.config.Entrypoint);
    expect(JSON.parse(last('CMD') ?? 'null')).toEqual(config.config.Cmd);
    expect(last('WORKDIR')).toBe(config.config.WorkingDir);
  });

  it('have the same environment, with PATH reaching /usr/local/bin (node and boxyard)', () => {
    const dockerEnv = Object.assign({}, ...all('ENV').map((i) => pairs(i.args))) as Record<string, string>;
    const imageEnv = Object.fromEntries(config.config.Env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    expect(dockerEnv).toEqual(imageEnv);
    expect(imageEnv.PATH?.split(':')).toContain('/usr/local/bin');
    expect(imageEnv.HOME).toBe('/tmp');
    expect(imageEnv.NODE_ENV).toBe('production');
  });

  it('expose the same ports and carry the same labels', () => {
    const ports = all('EXPOSE')
      .flatMap((i) => i.args.split(/\s+/))
      .map((p) => (p.includes('/') ? p : `${p}/tcp`));
    expect(ports.sort()).toEqual(Object.keys(config.config.ExposedPorts).sort());
    expect(Object.assign({}, ...all('LABEL').map((i) => pairs(i.args)))).toEqual(config.config.Labels);
  });

  it('install the same boxyard command on PATH, which runs the app at /app', () => {
    // Session pods run `boxyard terminal-agent`, service pods `serve <service>` through the ENTRYPOINT.
    expect(config.config.Entrypoint[0]).toBe('boxyard');
    expect(all('COPY').map((i) => i.args)).toContain(`--chmod=0755 ${WRAPPER} /usr/local/bin/boxyard`);
    expect(readFileSync(join(root, 'test/image/build-image.sh'), 'utf8')).toMatch(new RegExp(`^WRAPPER=${WRAPPER}\\b`, 'm'));
    accessSync(join(root, WRAPPER), constants.X_OK);
    const wrapper = readFileSync(join(root, WRAPPER), 'utf8');
    expect(wrapper.startsWith('#!/bin/sh\n')).toBe(true);
    // With the V8 flags of services/boxyard/node-flags (a file the image must carry, or node starts without them).
    const [, flags, target] = /^exec node \$\(sed '\/\^#\/d' (\/app\/\S+)\) (\/app\/\S+) "\$@"$/m.exec(wrapper) ?? [];
    expect(flags).toBe(`${config.config.WorkingDir}/services/boxyard/node-flags`);
    expect(target).toBe(`${config.config.WorkingDir}/services/boxyard/src/main.ts`);
    for (const file of [flags!, target!]) expect(existsSync(join(root, file.slice('/app/'.length)))).toBe(true);
    expect(wrapper).toMatch(/^export MALLOC_ARENA_MAX="\$\{MALLOC_ARENA_MAX:-2\}" MALLOC_MMAP_THRESHOLD_="\$\{MALLOC_MMAP_THRESHOLD_:-65536\}"/m);
  });
});
