// Gauges read from PostgreSQL at scrape time (webhook backlog, live terminal sessions) run their SQL at most once
// per `seconds`, however many scrapers ask and however often: concurrent scrapes share one query in flight, and
// later ones reuse its result until it is older than `seconds`. A scrape burst cannot become a query burst.
export function cachedReading<T>(read: () => Promise<T>, seconds: number, now: () => number = Date.now): () => Promise<T> {
  let last: { value: T; at: number } | undefined;
  let inFlight: Promise<T> | undefined;
  return () => {
    if (last && now() - last.at < seconds * 1000) return Promise.resolve(last.value);
    inFlight ??= read()
      .then((value) => {
        last = { value, at: now() };
        return value;
      })
      .finally(() => {
        inFlight = undefined;
      });
    return inFlight;
  };
}
