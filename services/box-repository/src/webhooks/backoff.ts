// When to try a failed delivery again: exponential backoff with "equal jitter" (half the delay fixed, half
// random), so receivers coming back from an outage are not hit by every replica's retries in the same second.

export interface BackoffSettings {
  backoff_initial_seconds: number;
  backoff_max_seconds: number;
}

/** Seconds to wait after failed attempt number `attempt` (1 = the first attempt failed). */
export function retryDelaySeconds(settings: BackoffSettings, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(settings.backoff_max_seconds, settings.backoff_initial_seconds * 2 ** Math.min(attempt - 1, 40));
  return ceiling / 2 + (random() * ceiling) / 2;
}
