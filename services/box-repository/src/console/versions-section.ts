// The versions part of a box page, rendered once per box and kept while the box's tree is unchanged: a wide box's
// page (1,000 versions x 2 providers x 2 architectures, 25 versions a page) spent ~6 ms of CPU a request on reading
// ~100 tree rows as JSON, validating and rendering them (make bench ONLY==scale). Checked on every request against
// the box's metadata_version, which findPath reads with the box (triggers bump it on every change of its versions,
// providers, architectures and files: migrations 0006, 0012), and its organization's and its own names (in links).
// What the list shows depends on the caller only through whether they see unreleased versions (members) and the
// manage panels (canManage): both are in the key, as is the page (older_than).
import type { Found } from '../access/hierarchy.ts';
import { createStampedCache, type StampedCache } from '../caching/stamped-cache.ts';
import type { ServiceContext } from '../context.ts';
import type { Box } from '../records.ts';
import { versionList, type VersionsSection } from './pages.ts';
import { versionTree } from './queries.ts';

export type VersionsSections = StampedCache<VersionsSection>;

export const createVersionsSections = (): VersionsSections => createStampedCache<VersionsSection>({ maxEntries: 1024, maxBytes: 32 * 1024 * 1024 });

export async function versionsSection(
  ctx: ServiceContext,
  { org, treeVersion }: Pick<Found, 'org' | 'treeVersion'>,
  box: Box,
  view: { member: boolean; canManage: boolean; olderThan: string | undefined },
): Promise<VersionsSection> {
  const key = `${box.id} ${view.member ? 'member' : 'public'} ${view.canManage ? 'manage' : 'read'} ${view.olderThan ?? ''}`;
  const stamp = `${treeVersion} ${org.name} ${box.name}`;
  const kept = treeVersion === undefined ? undefined : ctx.versionsSections.get(key, stamp);
  if (kept) return kept;
  // Read after the stamp: a change in between shows here and moves the stamp for the next request.
  const tree = await versionTree(ctx, box, view.member, view.olderThan);
  const section = { list: versionList(org, box, tree.versions, view.canManage), count: tree.versions.length, next: tree.next };
  if (treeVersion !== undefined) ctx.versionsSections.set(key, stamp, section, 2 * section.list.value.length);
  return section;
}
