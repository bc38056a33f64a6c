// Traffic kept up while the services roll (helm upgrade, kubectl rollout restart), the way their users make it:
// Vagrant metadata requests, file-share listings and uploads, an SSE stream that reconnects with Last-Event-ID,
// a slow box download begun before the roll, and a terminal typing every 100 ms. Each loop counts what it
// was served, what failed (with the first few reasons) and the longest time it waited for one answer.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { EventSource } from 'eventsource';
import { openTerminal, plain, type TerminalClient } from '@boxyard/terminal/testing/test-gateway.ts';
import { markHandled } from '@boxyard/kit';

export interface TrafficReport {
  name: string;
  served: number;
  failed: number;
  failures: string[];
  longestStallMs: number;
}

interface Loop {
  stop(): Promise<TrafficReport>;
}

class Counter {
  served = 0;
  failed = 0;
  failures: string[] = [];
  longestStallMs = 0;
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  ok(ms: number) {
    this.served++;
    this.longestStallMs = Math.max(this.longestStallMs, ms);
  }
  fail(reason: string, ms: number) {
    this.failed++;
    this.longestStallMs = Math.max(this.longestStallMs, ms);
    if (this.failures.length < 5) this.failures.push(reason);
  }
  report(): TrafficReport {
    return { name: this.name, served: this.served, failed: this.failed, failures: this.failures, longestStallMs: this.longestStallMs };
  }
}

/** Repeats `request` back to back (at most every `pauseMs`) until stopped; a non-2xx answer or an error is a failure. */
export function requestLoop(name: string, request: (i: number) => Promise<Response>, pauseMs = 20): Loop {
  const counter = new Counter(name);
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const began = Date.now();
      try {
        const response = await request(i);
        await response.arrayBuffer();
        if (response.ok) counter.ok(Date.now() - began);
        else counter.fail(`${response.status} ${response.headers.get('content-type') ?? ''}`, Date.now() - began);
      } catch (error) {
        counter.fail(String((error as Error & { cause?: Error }).cause?.message ?? (error as Error).message), Date.now() - began);
      }
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return counter.report();
    },
  };
}

/** An EventSource on /events: what it received (ids in order), and how often it had to reconnect. */
export function followEvents(url: string, authorization: string) {
  const ids: number[] = [];
  const paths: string[] = [];
  let connections = 0;
  const source = new EventSource(url, {
    fetch: (input, init) => {
      connections++;
      return fetch(input, { ...init, headers: { ...init.headers, authorization } });
    },
  });
  source.addEventListener('checksum-update', (event: MessageEvent) => {
    ids.push(Number(event.lastEventId));
    paths.push((JSON.parse(event.data as string) as { filePath: string }).filePath);
  });
  const opened = new Promise<void>((resolve) => source.addEventListener('open', () => resolve(), { once: true }));
  return { opened, ids, paths, connections: () => connections, close: () => source.close() };
}

/** A box download that takes its time (curl --limit-rate), begun before the roll: its sha256 at the end. */
export function slowDownload(url: string, caFile: string, bytesPerSecond: number): Promise<{ code: number; sha256: string; bytes: number; stderr: string }> {
  return new Promise((resolve) => {
    const curl = spawn('curl', ['-sS', '--fail', '--location', '--cacert', caFile, '--limit-rate', String(bytesPerSecond), url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const hash = createHash('sha256');
    let bytes = 0;
    let stderr = '';
    curl.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    curl.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    curl.on('close', (code) => resolve({ code: code ?? -1, sha256: hash.digest('hex'), bytes, stderr }));
  });
}

export const fileSha256 = (path: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

/**
 * A terminal typing a numbered `echo` every 100 ms. When its gateway goes away (1001) it reattaches to the same
 * session the way the terminal page does (through the Ingress, so to another replica) and keeps typing.
 * A keystroke counts as served when its echo comes back.
 */
export function typingTerminal(base: string, path: string, options: { cookie: string; origin: string }) {
  const counter = new Counter('terminal keystrokes');
  let client: TerminalClient | undefined;
  let running = true;
  let reattached = 0;
  let transcript = '';
  const connect = async () => {
    for (;;) {
      try {
        client = await openTerminal(base, path, options);
        return;
      } catch (error) {
        if (!running) return;
        counter.fail(`reattach: ${(error as Error).message}`, 0);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
  const done = (async () => {
    await connect();
    for (let i = 0; running; i++) {
      const began = Date.now();
      const marker = `tick-${i}-ok`;
      const current = client!;
      try {
        current.type(`echo tick-${i}-''ok\r`);
        const closed = current.closed.then(() => Promise.reject(new Error('closed')));
        markHandled(closed); // raced below; a socket that stays open never settles it
        await Promise.race([current.waitFor(marker, 15_000), closed]);
        counter.ok(Date.now() - began);
      } catch (error) {
        if (current.socket.readyState === current.socket.OPEN) counter.fail((error as Error).message.slice(0, 200), Date.now() - began);
        else {
          transcript += current.output();
          reattached++;
          await connect();
          // The line typed as the old socket closed may or may not have reached the shell: not a failure either way.
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    client: () => client!,
    async stop() {
      running = false;
      await done;
      transcript += client?.output() ?? '';
      return { report: counter.report(), reattached, transcript: plain(transcript) };
    },
  };
}
