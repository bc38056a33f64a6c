// Starts components in parallel; when one fails, stops those that did start, so nothing outlives the failure.
export interface Stoppable {
  stop(): Promise<void>;
}

export async function startTogether<T extends readonly Promise<Stoppable>[]>(starting: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const results = await Promise.allSettled(starting);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
    throw failed.reason;
  }
  return results.map((r) => (r as PromiseFulfilledResult<Stoppable>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}
