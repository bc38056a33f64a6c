// Every local session is its own agent process, so what the agent's code loads is paid once per session: importing
// the kit's index (Fastify, pg, S3 clients, ...) for one helper made each agent ~95 MiB PSS instead of ~21.
// This lists the modules the agent's entry point loads (its static imports) and refuses the heavy ones.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const main = fileURLToPath(new URL('./main.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'agent-footprint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const boxyardMain = fileURLToPath(new URL('../../../boxyard/src/main.ts', import.meta.url));

describe('the agent process', () => {
  it.each([
    ['the local backend’s agent (agent/main.ts)', [main]],
    ['a session pod’s agent (boxyard terminal-agent)', [boxyardMain, 'terminal-agent']],
  ])('%s loads its own modules, ws, node-pty and the OpenTelemetry API, not the kit or the gateway’s libraries', async (_name, command) => {
    const attempt = randomUUID();
    const list = join(dir, `loaded-${attempt}.txt`);
    const hook = join(dir, `hook-${attempt}.mjs`);
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); appendFileSync(${JSON.stringify(list)}, found.url + '\\n'); return found; } });
`,
    );
    writeFileSync(list, '');
    // No settings: the agent refuses to start, after its static imports have loaded (what every agent pays).
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('BOXYARD_AGENT_')));
    const exit = await run(process.execPath, ['--import', hook, ...command], { env, timeout: 30_000 }).then(
      () => 0,
      (error: { code?: number }) => error.code,
    );
    expect(exit).toBe(2); // refused its (missing) settings, as planned
    const loaded = [
      ...new Set(
        readFileSync(list, 'utf8')
          .split('\n')
          .filter((url) => url.startsWith('file:')),
      ),
    ];
    expect(loaded.some((url) => url.endsWith('/agent/agent.ts'))).toBe(true); // the list is the agent's
    const heavy = loaded.filter((url) =>
      /\/node_modules\/(fastify|pg|pg-[^/]+|slonik|minio|undici|@aws-sdk|zod|pino)\/|\/services\/kit\/src\/index\.ts$/.test(url),
    );
    expect(heavy).toEqual([]);
    expect(loaded.length).toBeLessThan(150);
  });
});
