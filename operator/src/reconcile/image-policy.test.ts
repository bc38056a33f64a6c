import { describe, expect, it } from 'vitest';
import { ImagePolicy, normalizeImage, repositoryOf } from './image-policy.ts';

describe('the image allow-list', () => {
  it('normalizes references as the container runtime does', () => {
    expect(normalizeImage('nginx')).toBe('docker.io/library/nginx');
    expect(normalizeImage('bitnami/nginx:1')).toBe('docker.io/bitnami/nginx:1');
    expect(normalizeImage('localhost/x')).toBe('localhost/x');
    expect(normalizeImage('registry:5000/x:1')).toBe('registry:5000/x:1');
    expect(repositoryOf('registry:5000/team/x:1.2@sha256:ab')).toBe('registry:5000/team/x');
    expect(repositoryOf('registry:5000/team/x')).toBe('registry:5000/team/x');
  });

  it('allows any tag or digest of a listed repository, and nothing else', () => {
    const policy = new ImagePolicy(['ghcr.io/boxyard/boxyard']);
    expect(policy.allows('ghcr.io/boxyard/boxyard:0.1.0')).toBe(true);
    expect(policy.allows('ghcr.io/boxyard/boxyard@sha256:0123')).toBe(true);
    expect(policy.allows('ghcr.io/boxyard/boxyard')).toBe(true);
    expect(policy.allows('ghcr.io/boxyard/boxyard-evil:1')).toBe(false);
    expect(policy.allows('ghcr.io/boxyard/boxyard/sub:1')).toBe(false);
    expect(policy.allows('evil.example/ghcr.io/boxyard/boxyard:1')).toBe(false);
    expect(policy.allows('busybox')).toBe(false);
  });

  it('matches a full reference exactly, a prefix ending in *, Docker Hub short names, and * as anything', () => {
    const policy = new ImagePolicy(['registry.example/shell:1', 'ghcr.io/boxyard/*', 'alpine']);
    expect(policy.allows('registry.example/shell:1')).toBe(true);
    expect(policy.allows('registry.example/shell:2')).toBe(false);
    expect(policy.allows('ghcr.io/boxyard/session:bookworm')).toBe(true);
    expect(policy.allows('ghcr.io/boxyardx/session:1')).toBe(false);
    expect(policy.allows('docker.io/library/alpine:3.20')).toBe(true);
    expect(new ImagePolicy(['*']).allows('anything.example/at:all')).toBe(true);
  });

  it('always allows the images given as always, and refuses with ImageNotAllowed naming the field', () => {
    const policy = new ImagePolicy([], ['registry.example/boxyard:1']);
    expect(policy.allows('registry.example/boxyard:1')).toBe(true);
    expect(policy.allows('registry.example/boxyard:2')).toBe(false);
    expect(() => policy.require([{ field: 'spec.sessionPod.image', image: 'busybox' }])).toThrow(
      expect.objectContaining({
        reason: 'ImageNotAllowed',
        message: expect.stringMatching(/^spec\.sessionPod\.image "busybox" is not on the operator's image allow-list \(registry\.example\/boxyard:1\)/),
      }),
    );
    expect(() => policy.require([{ field: 'spec.image', image: 'registry.example/boxyard:1' }])).not.toThrow();
  });
});
