export { freePort } from '@boxyard/kit/net/free-port.ts';

/** Resolves when `url` answers (any HTTP status), or rejects after `timeoutMs`. */
export async function waitForHttp(url: string, timeoutMs: number, init?: RequestInit): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      await fetch(url, { ...init, signal: AbortSignal.timeout(2000) });
      return;
    } catch (error) {
      last = error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms: ${String(last)}`);
}
