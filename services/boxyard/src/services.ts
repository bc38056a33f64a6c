// The services the `boxyard` command can run, in the order `boxyard dev` starts them.
import type { ServiceDefinition } from '@boxyard/kit/service-definition.ts';
import { serviceDefinition as boxRepository } from '@boxyard/box-repository';
import { serviceDefinition as fileShare } from '@boxyard/file-share';
import { serviceDefinition as secondService } from '@boxyard/second-service';
import { serviceDefinition as terminal } from '@boxyard/terminal';

export type { DevContext, RunningService, ServiceDefinition } from '@boxyard/kit/service-definition.ts';

export const services: ServiceDefinition[] = [boxRepository, fileShare, terminal, secondService];

export const findService = (name: string) => services.find((s) => s.name === name);
