// The services the `boxyard` command can run: the registry's list (services/registry), in the order `boxyard dev`
// starts them.
export { services, findService } from '@boxyard/registry';
export type { DevContext, RunningService, ServiceDefinition } from '@boxyard/kit/service-definition.ts';
