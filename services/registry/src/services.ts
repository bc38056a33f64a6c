// Boxyard's services, in the order `boxyard dev` starts them: the one list the `boxyard` command (dev, serve, serve
// all, backup, restore), the operator (kinds.ts), the generators and the tests read; then any given in
// BOXYARD_EXTRA_SERVICES (extra-services.ts). Each entry is the service's declaration (service.ts): its routes load
// only when it starts, so reading the list is light.
import type { RegisteredService } from '@boxyard/kit/service/contract.ts';
import { serviceDefinition as boxRepository } from '@boxyard/box-repository/service.ts';
import { serviceDefinition as fileShare } from '@boxyard/file-share/service.ts';
import { serviceDefinition as secondService } from '@boxyard/second-service/service.ts';
import { serviceDefinition as terminal } from '@boxyard/terminal/service.ts';
import { extraServices } from './extra-services.ts';

const builtIn: RegisteredService[] = [boxRepository, fileShare, terminal, secondService];
const extra = await extraServices();
for (const service of extra) if (builtIn.some((s) => s.name === service.name)) throw new Error(`BOXYARD_EXTRA_SERVICES: ${service.name} is already a service`);

export const services: RegisteredService[] = [...builtIn, ...extra];

export const findService = (name: string) => services.find((s) => s.name === name);
