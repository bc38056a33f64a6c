// The Boxyard version a backup was made with (the `boxyard` package's), recorded in the manifest.
import { readFileSync } from 'node:fs';

export const BOXYARD_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
