// The work queue of a controller, with client-go's guarantees: a key waiting to be processed is held once however
// many events name it; a key is never handed to two workers at once (an event arriving while it is processed
// queues it again for afterwards); failures requeue with per-key exponential backoff, and all rate-limited requeues
// together stay under a token bucket so a broken dependency cannot make the operator hammer the apiserver.

export interface RateLimiterOptions {
  /** First retry delay; doubles per consecutive failure of the same key. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Sustained rate of rate-limited requeues across all keys, and the burst above it. */
  qps?: number;
  burst?: number;
  now?: () => number;
}

/** Per-key exponential backoff combined with a global token bucket: the larger delay wins. */
export class RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  private tokens: number;
  private last: number;

  constructor(options: RateLimiterOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 300_000;
    this.qps = options.qps ?? 10;
    this.burst = options.burst ?? 100;
    this.now = options.now ?? Date.now;
    this.tokens = this.burst;
    this.last = this.now();
  }

  /** The delay before `key` may be retried; counts one more failure. */
  when(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const backoff = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(failures, 40));
    return Math.max(backoff, this.reserve());
  }

  /**
   * Takes a token from the bucket; returns how long to wait until it is really available. The debt is capped at
   * the maximum delay: after a mass failure (thousands of keys at once) retries spread over at most that long
   * instead of queueing for hours.
   */
  private reserve(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens = Math.max(this.tokens - 1, -(this.maxDelayMs / 1000) * this.qps);
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/** What a queue reports for client-go's workqueue metrics (runtime/metrics.ts). */
export interface QueueObserver {
  /** A key entered the queue (not counted again while it waits). */
  added(): void;
  depth(depth: number): void;
  /** Seconds a key waited in the queue before a worker took it. */
  waited(seconds: number): void;
  /** Seconds a worker spent on a key. */
  worked(seconds: number): void;
  /** A key was requeued with backoff. */
  retried(): void;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  /** Keys that need processing (queued, or to be requeued when their current processing is done). */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { due: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private closed = false;
  readonly limiter: RateLimiter;
  /** Metrics hooks (client-go's workqueue metrics). */
  observer?: QueueObserver;
  /** When each queued key entered the queue, and when each key in process was taken (ms). */
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();

  constructor(limiter: RateLimiter = new RateLimiter()) {
    this.limiter = limiter;
  }

  get length(): number {
    return this.queue.length;
  }

  /** True while `key` is queued, delayed or being processed. */
  has(key: string): boolean {
    return this.dirty.has(key) || this.processing.has(key) || this.delayed.has(key);
  }

  add(key: string): void {
    if (this.closed || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it again
    this.observer?.added();
    this.addedAt.set(key, performance.now());
    const waiter = this.waiters.shift();
    if (waiter) waiter(key);
    else {
      this.queue.push(key);
      this.observer?.depth(this.queue.length);
    }
  }

  /** Adds `key` after `ms`; an earlier pending due time for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.closed) return;
    if (ms <= 0) return this.add(key);
    const due = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.due <= due) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.delayed.set(key, { due, timer });
  }

  /** Requeues `key` after its backoff; returns the delay. */
  addRateLimited(key: string): number {
    const delay = this.limiter.when(key);
    this.observer?.retried();
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the failure count of `key` (after a success). */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** The next key to process, waiting for one; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.observer?.depth(this.queue.length);
      this.take(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => {
      this.waiters.push((next) => {
        if (next !== undefined) this.take(next);
        resolve(next);
      });
    });
  }

  private take(key: string): void {
    this.dirty.delete(key);
    this.processing.add(key);
    const now = performance.now();
    this.observer?.waited((now - (this.addedAt.get(key) ?? now)) / 1000);
    this.addedAt.delete(key);
    this.startedAt.set(key, now);
  }

  /** Seconds each key now being processed has been at it (workqueue_unfinished_work_seconds). */
  inFlightSeconds(): number[] {
    const now = performance.now();
    return [...this.startedAt.values()].map((start) => (now - start) / 1000);
  }

  /** Marks `key` processed; if it was added meanwhile, it is queued again now. */
  done(key: string): void {
    this.processing.delete(key);
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.observer?.worked((performance.now() - started) / 1000);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  shutdown(): void {
    this.closed = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }
}
