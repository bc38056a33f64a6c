// Services outside the registry's own list, loaded by module: BOXYARD_EXTRA_SERVICES holds comma-separated absolute
// paths (or package names), each exporting `serviceDefinition` (made with the kit's defineService). It is how a new
// service runs in `boxyard dev`, `boxyard backup` and the operator before it joins the list in services.ts, and how
// the fixture kind's test (test/fixture-kind) runs one. Whoever sets a process's environment already chooses the
// code it runs (NODE_OPTIONS does the same), so this opens nothing new.
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RegisteredService } from '@boxyard/kit/service/contract.ts';

export const EXTRA_SERVICES_VARIABLE = 'BOXYARD_EXTRA_SERVICES';

export async function extraServices(value = process.env[EXTRA_SERVICES_VARIABLE]): Promise<RegisteredService[]> {
  const modules = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return Promise.all(
    modules.map(async (specifier) => {
      const loaded = (await import(isAbsolute(specifier) ? pathToFileURL(specifier).href : specifier)) as { serviceDefinition?: RegisteredService };
      if (!loaded.serviceDefinition?.name) throw new Error(`${EXTRA_SERVICES_VARIABLE}: ${specifier} exports no serviceDefinition`);
      return loaded.serviceDefinition;
    }),
  );
}
