// The box check's limits (uploads.inspection): a gzip bomb is refused once a limit is passed, after unpacking
// no more than the limit, while real-shaped boxes (metadata.json after a large, incompressible disk image) pass.
// Pure logic: the inspector is fed the bytes as an upload would feed them.
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { makeBox, makeGzipBomb, tarHeader } from '../testing/boxes.ts';
import { BoxInspector, DEFAULT_INSPECTION_LIMITS, NotABoxError, RATIO_GRACE_BYTES, type InspectionLimits } from './box-inspector.ts';

const MiB = 1024 * 1024;

/** Feeds `bytes` in 64 KiB chunks, as a request body arrives; returns the inspector and how it ended. */
async function inspect(bytes: Buffer, limits: InspectionLimits = DEFAULT_INSPECTION_LIMITS) {
  const inspector = new BoxInspector(limits);
  let fed = 0;
  try {
    for (let offset = 0; offset < bytes.length; offset += 64 * 1024) {
      const chunk = bytes.subarray(offset, offset + 64 * 1024);
      await inspector.write(chunk);
      fed += chunk.length;
    }
    await inspector.end();
    return { inspector, fed, error: undefined };
  } catch (error) {
    return { inspector, fed, error: error as NotABoxError };
  } finally {
    inspector.destroy();
  }
}

describe('box inspector limits', () => {
  it("refuses a gzip bomb (1 GiB of zero padding before metadata.json) after unpacking no more than the ratio's grace (was: inflated all of it, then accepted)", async () => {
    const bomb = await makeGzipBomb(1024);
    expect(bomb.length).toBeLessThan(2 * MiB);
    const { inspector, fed, error } = await inspect(bomb);
    expect(error).toBeInstanceOf(NotABoxError);
    expect(error).toMatchObject({ rule: 'box_limit', params: { limit: 'uploads.inspection.max_expansion_ratio', max: 100 } });
    expect(error!.message).toMatch(/expands more than 100 times/);
    // Stopped at the limit: a little over the grace unpacked (one gunzip output chunk), far from the 1 GiB.
    expect(inspector.unpackedBytes).toBeGreaterThan(RATIO_GRACE_BYTES);
    expect(inspector.unpackedBytes).toBeLessThan(RATIO_GRACE_BYTES + 4 * MiB);
    // ... and refused while the upload was still coming in: most of the bomb was never fed.
    expect(fed).toBeLessThan(bomb.length / 4);
  });

  it('refuses more unpacked bytes than max_unpacked_bytes before metadata.json, even when they do not compress', async () => {
    const box = await makeBox({ leading: [{ name: 'box-disk.img', content: randomBytes(3 * MiB) }] });
    const { inspector, error } = await inspect(box, { ...DEFAULT_INSPECTION_LIMITS, max_unpacked_bytes: 2 * MiB });
    expect(error).toMatchObject({ rule: 'box_limit', params: { limit: 'uploads.inspection.max_unpacked_bytes', max: 2 * MiB } });
    expect(inspector.unpackedBytes).toBeLessThan(2 * MiB + 512 * 1024);
    // A plain tar is held to the same limit.
    const plain = await makeBox({ gzip: false, leading: [{ name: 'box-disk.img', content: randomBytes(3 * MiB) }] });
    expect((await inspect(plain, { ...DEFAULT_INSPECTION_LIMITS, max_unpacked_bytes: 2 * MiB })).error).toMatchObject({ rule: 'box_limit' });
  });

  it('refuses an entry larger than max_unpacked_bytes from its header, unpacking none of it', async () => {
    const zeros = gzipSync(Buffer.alloc(MiB), { level: 9 });
    const archive = Buffer.concat([gzipSync(tarHeader('huge.img', 8 * 1024 ** 3 - 512)), ...Array.from({ length: 8 }, () => zeros)]);
    const { inspector, error } = await inspect(archive, { ...DEFAULT_INSPECTION_LIMITS, max_unpacked_bytes: 4 * 1024 ** 3 });
    expect(error).toMatchObject({ rule: 'box_limit', params: { limit: 'uploads.inspection.max_unpacked_bytes' } });
    expect(error!.message).toMatch(/an entry of 8589934080 bytes/);
    expect(inspector.unpackedBytes).toBeLessThan(2 * MiB);
  });

  it('refuses more than max_entries entries before metadata.json', async () => {
    const leading = Array.from({ length: 20 }, (_, i) => ({ name: `file-${i}`, content: Buffer.from('x') }));
    const { error } = await inspect(await makeBox({ leading }), { ...DEFAULT_INSPECTION_LIMITS, max_entries: 10 });
    expect(error).toMatchObject({ rule: 'box_limit', params: { limit: 'uploads.inspection.max_entries', max: 10 } });
    expect((await inspect(await makeBox({ leading }), { ...DEFAULT_INSPECTION_LIMITS, max_entries: 21 })).error).toBeUndefined();
  });

  it('accepts a real-shaped box: metadata.json after an incompressible disk image, within the limits', async () => {
    const box = await makeBox({
      leading: [
        { name: 'Vagrantfile.extra', content: Buffer.from('# x\n') },
        { name: 'box-disk001.vmdk', content: randomBytes(8 * MiB) },
      ],
    });
    const { inspector, error } = await inspect(box);
    expect(error).toBeUndefined();
    expect(inspector.metadata).toEqual({ provider: 'virtualbox' });
    expect(inspector.unpackedBytes).toBeGreaterThan(8 * MiB);
  });
});
