// Failures that change nothing for the caller (a best-effort cleanup, a last-used stamp, closing what may already be
// closed) are still worth seeing when someone debugs: every one goes through here with its reason, at debug level.
// `.catch(() => {})` is refused by the lint rule that points here.
import { debuglog } from 'node:util';

type DebugSink = (fields: { err: unknown; reason: string }, message: string) => void;

const nodeDebug = debuglog('boxyard');
let sink: DebugSink | undefined;

/** Sends ignored failures to a service's logger at debug (the first logger given wins: one process, one log). */
export function logIgnoredErrorsTo(logger: { debug: DebugSink }): void {
  sink ??= (fields, message) => logger.debug(fields, message);
}

/**
 * A `.catch` handler for a failure that is safe to drop, logged at debug with `reason` (the process's logger once a
 * service has started, else NODE_DEBUG=boxyard). Resolves to undefined.
 */
export function ignoreError(reason: string): (error: unknown) => undefined {
  return (error) => {
    if (sink) sink({ err: error, reason }, `ignored: ${reason}`);
    else nodeDebug('ignored (%s): %s', reason, error instanceof Error ? error.message : String(error));
    return undefined;
  };
}

/**
 * Marks a promise as handled without dropping its failure: whoever awaits it later still gets the rejection. For
 * promises raced or awaited in a later turn, which Node would otherwise report as unhandled meanwhile.
 */
export function markHandled(promise: Promise<unknown>): void {
  promise.catch(noop);
}

function noop(): void {
  // the rejection is read by whoever awaits the promise
}
