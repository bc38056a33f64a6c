// Which images a resource may run. Whoever may create a BoxRepository, FileShare or TerminalPool chooses the image
// of pods that mount the Secrets the resource names; the allow-list keeps that choice to images the platform team
// trusts. References are compared in their normalized form (`nginx` is `docker.io/library/nginx`).
import { CheckFailure } from '../checks/check-failure.ts';

/** `docker.io/library/x` for `x`, `docker.io/a/x` for `a/x`; other registries (a dot, a port or localhost) as they are. */
export function normalizeImage(reference: string): string {
  const slash = reference.indexOf('/');
  const first = slash < 0 ? '' : reference.slice(0, slash);
  const hasRegistry = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return reference;
  return slash < 0 ? `docker.io/library/${reference}` : `docker.io/${reference}`;
}

/** The repository of a reference: without `@digest` and without `:tag` (a colon after the last slash). */
export function repositoryOf(reference: string): string {
  const withoutDigest = reference.split('@')[0]!;
  const colon = withoutDigest.lastIndexOf(':');
  return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.slice(0, colon) : withoutDigest;
}

export class ImagePolicy {
  private readonly patterns: string[];
  private readonly anything: boolean;

  /**
   * `patterns`: a repository (`ghcr.io/boxyard/boxyard`: any tag or digest of it), a full reference (with `:tag` or
   * `@digest`: exactly that), or a prefix ending in `*` (`ghcr.io/boxyard/*`). A lone `*` allows every image.
   * `always`: images allowed whatever the list says (the operator's default image, which resources may not avoid).
   */
  constructor(patterns: string[], always: string[] = []) {
    const all = [...patterns, ...always].map((p) => p.trim()).filter(Boolean);
    this.anything = all.includes('*');
    this.patterns = all.filter((p) => p !== '*');
  }

  allows(image: string): boolean {
    if (this.anything) return true;
    const normalized = normalizeImage(image);
    return this.patterns.some((pattern) => {
      if (pattern.endsWith('*')) return normalized.startsWith(normalizeImage(pattern.slice(0, -1)));
      const wanted = normalizeImage(pattern);
      return repositoryOf(wanted) === wanted ? repositoryOf(normalized) === wanted : normalized === wanted;
    });
  }

  describe(): string {
    return this.anything ? 'any image' : this.patterns.join(', ');
  }

  /** Fails with ImageNotAllowed, naming the field, when an image is not on the list. */
  require(images: { field: string; image: string }[]): void {
    const refused = images.filter((i) => !this.allows(i.image));
    if (!refused.length) return;
    throw new CheckFailure(
      'ImageNotAllowed',
      `${refused.map((i) => `${i.field} "${i.image}"`).join(' and ')} ${refused.length > 1 ? 'are' : 'is'} not on the operator's image allow-list (${this.describe()}): ` +
        'use an allowed image, or ask the platform team to add it to the chart value allowedImages. Nothing was created or changed',
    );
  }
}
