// Share links and file requests: what the plugin wires in. The public pages (/-/s/, /-/zip/) are registered outside
// the share's credential check — a link's Basic password belongs to no account — and the management API
// (/api/shares) inside it.
import type { ObjectStore } from '@boxyard/kit';
import { createVerifiedCredentials } from '@boxyard/kit/accounts/verified-credentials.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DatabasePool } from 'slonik';
import type { FileShareConfig } from '../config.ts';
import type { Sweeper } from '../maintenance/sweeper.ts';
import type { Tree } from '../tree/tree-store.ts';
import { createActivity } from './activity.ts';
import { linkRoutes } from './link-routes.ts';
import { requestTusRoutes } from './request-tus.ts';
import type { ResumableOptions } from '../resumable/tus-routes.ts';
import { shareRoutes } from './share-routes.ts';
import { createShareStore } from './share-store.ts';

export { requestWrite, type RequestWrite } from './request-upload.ts';

export interface SharesDeps {
  pool: DatabasePool;
  store: ObjectStore;
  tree: Tree;
  sweeper: Sweeper;
  config: FileShareConfig;
  publicUrl: string;
  secureCookies(request: FastifyRequest): boolean;
}

export function createShares(app: FastifyInstance, deps: SharesDeps) {
  const shares = createShareStore(deps.pool);
  const activity = createActivity(deps.tree, app.metrics, app.log);
  const { config } = deps;
  const gate = {
    pool: deps.pool,
    secret: config.session.secret,
    namespace: `file-share:${config.database.schema}`,
    failuresPerLink: config.shares.password_failures_per_link,
    failuresPerAddress: config.shares.password_failures_per_address,
    windowSeconds: config.shares.password_window_seconds,
    verified: createVerifiedCredentials(),
  };
  const maxUploadBytes = config.uploads.max_bytes;
  return {
    store: shares,
    /** /-/s/ and /-/zip/: register outside the credential check. */
    publicRoutes: (instance: FastifyInstance) =>
      linkRoutes(instance, {
        pool: deps.pool,
        store: deps.store,
        tree: deps.tree,
        sweeper: deps.sweeper,
        shares,
        activity,
        gate,
        maxUploadBytes,
        secureCookies: deps.secureCookies,
      }),
    /** /-/tus/<token>: resumable uploads through file requests (outside the credential check); /api/uploads' options. */
    resumableRoutes: (instance: FastifyInstance, tus: Omit<ResumableOptions, 'writeAccess' | 'mount'>) =>
      requestTusRoutes(instance, { ...tus, shares, activity, gate, maxUploadBytes }),
    /** /api/shares: register where request.principal is set. */
    apiRoutes: (instance: FastifyInstance) =>
      shareRoutes(instance, { tree: deps.tree, shares, activity, publicUrl: deps.publicUrl, limits: config.shares, maxUploadBytes }),
  };
}
