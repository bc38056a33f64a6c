import { describe, expect, it } from 'vitest';
import { createSecretBox, newAgentSecret } from './agent-secret.ts';

const secretA = 'a'.repeat(32);
const secretB = 'b'.repeat(32);

describe('agent secrets', () => {
  it('makes a fresh 256-bit secret for every session', () => {
    const one = newAgentSecret();
    const two = newAgentSecret();
    expect(one).not.toBe(two);
    expect(Buffer.from(one, 'base64url')).toHaveLength(32);
  });

  it('seals for the record and opens with the current or a previous session secret', () => {
    const sealed = createSecretBox([secretA]).seal('agent-secret', 'session-1');
    expect(sealed).not.toContain('agent-secret');
    expect(createSecretBox([secretA]).open(sealed, 'session-1')).toBe('agent-secret');
    // Rotated: the old secret is listed in previous_secrets.
    expect(createSecretBox([secretB, secretA]).open(sealed, 'session-1')).toBe('agent-secret');
    expect(() => createSecretBox([secretB]).open(sealed, 'session-1')).toThrow(/unknown key/);
  });

  it("won't open a sealed secret moved to another session's record, or tampered with", () => {
    const box = createSecretBox([secretA]);
    const sealed = box.seal('agent-secret', 'session-1');
    expect(() => box.open(sealed, 'session-2')).toThrow();
    const parts = sealed.split('.');
    parts[4] = Buffer.from('tampered').toString('base64url');
    expect(() => box.open(parts.join('.'), 'session-1')).toThrow();
  });
});
