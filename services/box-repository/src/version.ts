import { readFileSync } from 'node:fs';

/** The package version, for /api/status, /api/discover, OpenAPI and the webhook User-Agent. */
export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
