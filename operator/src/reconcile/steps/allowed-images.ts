// First step of every reconcile, before the finalizer: a resource naming an image off the allow-list gets
// ImageNotAllowed, and nothing is created or changed.
import type { ServiceResource, TerminalPoolSpec } from '../../crds/types.ts';
import type { KindInfo } from '../../desired/kinds.ts';
import type { ImagePolicy } from '../image-policy.ts';

/** Fails with ImageNotAllowed when spec.image (or a TerminalPool's spec.sessionPod.image) is not allowed. */
export function requireAllowedImages(policy: Pick<ImagePolicy, 'require'>, kind: KindInfo, resource: ServiceResource): void {
  const images: { field: string; image: string }[] = [];
  if (resource.spec.image) images.push({ field: 'spec.image', image: resource.spec.image });
  const sessionImage = kind.kind === 'TerminalPool' ? (resource.spec as TerminalPoolSpec).sessionPod?.image : undefined;
  if (sessionImage) images.push({ field: 'spec.sessionPod.image', image: sessionImage });
  policy.require(images);
}
