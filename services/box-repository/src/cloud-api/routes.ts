// The Vagrant Cloud API the stock publishing clients speak: v1 (Debian 12's `vagrant cloud` with the
// vagrant_cloud gem 3.0.5, Packer 1.6.6's vagrant-cloud post-processor) and v2 (Vagrant ≥ 2.4,
// packer-plugin-vagrant ≥ 1.1: the same calls with an architecture segment). Answers in the shapes and with the
// statuses those clients read, errors as `{errors, success: false}` (errors.ts).
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.ts';
import { boxRoutes } from './box-routes.ts';
import { installCloudErrors } from './errors.ts';
import { providerRoutes } from './provider-routes.ts';
import { uploadTargetRoutes, uploadUrlRoutes } from './upload-routes.ts';
import { versionRoutes } from './version-routes.ts';

export async function cloudApiRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }): Promise<void> {
  for (const [prefix, v2] of [
    ['/api/v1', false],
    ['/api/v2', true],
  ] as const) {
    await app.register(
      async (scope) => {
        // Described by the Vagrant Cloud API's own documentation, in its own error shape: not in /openapi.json.
        scope.addHook('onRoute', (route) => {
          route.schema = { ...route.schema, hide: true };
        });
        installCloudErrors(scope);
        const flavour = { v2, prefix };
        boxRoutes(scope, ctx, flavour);
        versionRoutes(scope, ctx, flavour);
        providerRoutes(scope, ctx, flavour);
        uploadUrlRoutes(scope, ctx, flavour);
        await scope.register((uploads) => uploadTargetRoutes(uploads, ctx));
      },
      { prefix },
    );
  }
}
