// The gateway's side of the agent API. An agent address is `unix:/path/to.sock` (local backend) or
// `host:port` (a session pod's IP and agent port).
import { request as httpRequest, type RequestOptions } from 'node:http';
import WebSocket from 'ws';
import type { ExitReason } from '../protocol.ts';
import type { AgentStatus } from './agent.ts';
import { withTraceparent } from './tracing.ts';

const MAX_FRAME = 1_048_576;

function target(address: string): { http: RequestOptions; ws: string } {
  if (address.startsWith('unix:')) {
    const path = address.slice('unix:'.length);
    return { http: { socketPath: path }, ws: `ws+unix://${path}:/attach` };
  }
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return { http: { host, port }, ws: `ws://${host.includes(':') ? `[${host}]` : host}:${port}/attach` };
}

export class AgentUnreachableError extends Error {
  override name = 'AgentUnreachableError';
}

async function call<T>(address: string, secret: string, method: string, path: string, body?: unknown, timeoutMs = 3000): Promise<{ status: number; body: T }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        ...target(address).http,
        method,
        path,
        headers: withTraceparent({ authorization: `Bearer ${secret}`, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) }),
        timeout: timeoutMs,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : undefined) as T });
          } catch {
            reject(new AgentUnreachableError(`agent at ${address} answered ${res.statusCode} with a non-JSON body`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new AgentUnreachableError(`agent at ${address} did not answer within ${timeoutMs} ms`)));
    req.on('error', (error) => reject(error instanceof AgentUnreachableError ? error : new AgentUnreachableError(`agent at ${address}: ${error.message}`)));
    req.end(payload);
  });
}

export async function agentStatus(address: string, secret: string): Promise<AgentStatus> {
  const { status, body } = await call<AgentStatus>(address, secret, 'GET', '/status');
  if (status !== 200) throw new AgentUnreachableError(`agent at ${address} answered ${status} to /status`);
  return body;
}

export async function terminateAgent(address: string, secret: string, reason: ExitReason): Promise<void> {
  const { status } = await call(address, secret, 'POST', '/terminate', { reason });
  if (status !== 202) throw new AgentUnreachableError(`agent at ${address} answered ${status} to /terminate`);
}

/** Resolves when the agent answers /healthz, or rejects after `timeoutMs`. */
export async function waitForAgent(address: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const { status } = await call(address, '', 'GET', '/healthz', undefined, 2000);
      if (status === 200) return;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new AgentUnreachableError(`agent at ${address} not ready within ${timeoutMs} ms: ${String(last)}`);
}

/** Opens the terminal stream of a session on its agent. */
export function connectAgent(address: string, secret: string): WebSocket {
  return new WebSocket(target(address).ws, { headers: withTraceparent({ authorization: `Bearer ${secret}` }), maxPayload: MAX_FRAME, handshakeTimeout: 10_000, perMessageDeflate: false });
}
