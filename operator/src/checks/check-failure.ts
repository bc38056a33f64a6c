// A pre-rollout check that failed: `reason` becomes the Stalled condition's reason, `message` tells a person what
// is wrong and what to do. Never carries a secret.
export class CheckFailure extends Error {
  override name = 'CheckFailure';
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error(`${what}: no answer within ${ms / 1000} s`), { code: 'ETIMEDOUT' })), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
