// The browser tests' network cut for a tus endpoint: every PATCH from `cutFrom` on is aborted the way Chromium
// reports a lost connection, until `restore()`; the offsets of the PATCHes let through are kept on each side of it.
import type { BrowserContext, Route } from 'playwright-core';

export interface NetworkCut {
  /** Upload-Offset of each PATCH let through before `restore()`. */
  beforeCut: number[];
  /** Upload-Offset of each PATCH after it. */
  afterCut: number[];
  /** Creation requests (POST) seen, on either side. */
  readonly creations: number;
  restore(): void;
}

export async function cutTusNetwork(context: BrowserContext, pattern: string, cutFrom: number): Promise<NetworkCut> {
  let creations = 0;
  let down = true;
  const cut: NetworkCut = {
    beforeCut: [],
    afterCut: [],
    get creations() {
      return creations;
    },
    restore: () => (down = false),
  };
  await context.route(pattern, (route: Route) => {
    const request = route.request();
    if (request.method() === 'POST') creations++;
    if (request.method() !== 'PATCH') return route.continue();
    const offset = Number(request.headers()['upload-offset']);
    if (down && offset >= cutFrom) return route.abort('internetdisconnected');
    (down ? cut.beforeCut : cut.afterCut).push(offset);
    return route.continue();
  });
  return cut;
}
