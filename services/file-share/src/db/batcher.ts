// Group commit in the process: calls that arrive while a round is in flight wait and go together in the next round,
// one statement or transaction (one commit, one WAL flush, one turn of the tree lock) for all of them. An idle
// batcher runs a call at once and alone: no timer, no added latency. One round at a time: the rounds this is for
// (commits under the tree lock) run one after another anyway.

/** What one item of a round came to: its own value or its own error, so one refusal does not fail the others. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Waiting<T, R> {
  item: T;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export interface BatcherOptions<T, R> {
  /** The most items one round takes; the rest wait for the next. */
  maxItems: number;
  /** Runs a round: one outcome per item, in order. A rejection fails every item of the round with its error. */
  run(items: readonly T[]): Promise<readonly Outcome<R>[]>;
}

export function createBatcher<T, R>(options: BatcherOptions<T, R>): (item: T) => Promise<R> {
  const queue: Waiting<T, R>[] = [];
  let running = false;

  function settle(round: Waiting<T, R>[], outcomes: readonly Outcome<R>[]): void {
    round.forEach((waiting, i) => {
      const outcome = outcomes[i];
      if (!outcome) waiting.reject(new Error('batch round gave no outcome for an item'));
      else if (outcome.ok) waiting.resolve(outcome.value);
      else waiting.reject(outcome.error);
    });
  }

  function next(): void {
    if (running || queue.length === 0) return;
    running = true;
    const round = queue.splice(0, options.maxItems);
    let result: Promise<readonly Outcome<R>[]>;
    try {
      result = options.run(round.map((waiting) => waiting.item));
    } catch (error) {
      result = Promise.reject(error);
    }
    void result
      .then(
        (outcomes) => settle(round, outcomes),
        (error: unknown) => round.forEach((waiting) => waiting.reject(error)),
      )
      .finally(() => {
        running = false;
        next();
      });
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      next();
    });
}

/** A promise's outcome as a value. */
export const outcomeOf = <R>(promise: Promise<R>): Promise<Outcome<R>> =>
  promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
