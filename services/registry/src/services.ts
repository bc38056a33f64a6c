// Boxyard's services, in the order `boxyard dev` starts them: the one list the `boxyard` command (dev, serve, serve
// all, backup, restore) and the tests read. A service's cluster kind, if it has one, is in kinds.ts.
import type { RegisteredService } from '@boxyard/kit/service/contract.ts';
import { serviceDefinition as boxRepository } from '@boxyard/box-repository';
import { serviceDefinition as fileShare } from '@boxyard/file-share';
import { serviceDefinition as secondService } from '@boxyard/second-service';
import { serviceDefinition as terminal } from '@boxyard/terminal';

export const services: RegisteredService[] = [boxRepository, fileShare, terminal, secondService];

export const findService = (name: string) => services.find((s) => s.name === name);
