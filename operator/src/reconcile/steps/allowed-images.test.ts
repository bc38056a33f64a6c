import { describe, expect, it } from 'vitest';
import type { TerminalPoolSpec } from '../../crds/types.ts';
import { ImagePolicy } from '../image-policy.ts';
import { requireAllowedImages } from './allowed-images.ts';
import { boxRepository, boxes, shells, terminalPool } from './fake-fixtures.ts';

const policy = new ImagePolicy(['ghcr.io/boxyard/*']);

describe('allowed images (no client needed)', () => {
  it('passes a resource without an image (the default) or with an allowed one', () => {
    expect(() => requireAllowedImages(policy, boxRepository, boxes())).not.toThrow();
    expect(() => requireAllowedImages(policy, boxRepository, boxes({ image: 'ghcr.io/boxyard/boxyard:0.2.0' }))).not.toThrow();
  });

  it('names every refused field, the session image of a TerminalPool included', () => {
    const { sessionPod } = shells().spec as TerminalPoolSpec;
    const pool = shells({ image: 'evil.example/x:1', sessionPod: { ...sessionPod, image: 'ubuntu' } });
    expect(() => requireAllowedImages(policy, terminalPool, pool)).toThrow(
      expect.objectContaining({
        reason: 'ImageNotAllowed',
        message: expect.stringMatching(/^spec\.image "evil\.example\/x:1" and spec\.sessionPod\.image "ubuntu" are not on the operator's image allow-list/),
      }),
    );
  });
});
