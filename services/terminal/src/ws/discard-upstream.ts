// Drops the gateway's connection to an agent that is no longer wanted (the client left while it was being set
// up). connectAgent hands the WebSocket back while its handshake may still be under way, and ws reports a
// terminate() during the handshake as an 'error' event: with no listener that is an uncaught exception, which ends
// the gateway process with every session attached to it.
import type { WebSocket } from 'ws';

export function discardUpstream(upstream: WebSocket): void {
  upstream.on('error', () => {});
  upstream.terminate();
}
