// Boxyard's one client for the Kubernetes API, used by the operator and the terminal's pod backend alike. A small
// REST client, because the operator needs what generated clients hide: the server-side apply content type, the
// status subresource, metadata-only lists and watches, its own keep-alive connections, watch streams it controls,
// and a count of every request by verb (the steady state must issue no writes). Every request is traced
// (tracing.ts) and authenticated afresh from its credentials (credentials.ts: in-cluster or a kubeconfig).
import https from 'node:https';
import { withoutTrailingSlashes } from '../text/trim.ts';
import type { Credentials } from './credentials.ts';
import { collectionPath, objectPath, resourceTypeOf, type ResourceType } from './resources.ts';
import { traceApiCall } from './tracing.ts';
import type { KubeList, KubeObject, KubeStatus, WatchEvent } from './types.ts';

/** The operator's field manager, the default one. */
export const FIELD_MANAGER = 'boxyard-operator';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'apply' | 'delete';
export const WRITE_VERBS: ReadonlySet<Verb> = new Set(['create', 'update', 'patch', 'apply', 'delete']);

export interface RequestRecord {
  verb: Verb;
  resource: string;
  code: number; // 0 when no response arrived
  seconds: number;
}

/** An error answer of the apiserver, with its Status object. */
export class KubeApiError extends Error {
  override name = 'KubeApiError';
  readonly status: number;
  readonly reason: string;
  readonly body: KubeStatus | undefined;
  constructor(status: number, body: KubeStatus | undefined, what: string) {
    super(`${what}: ${status} ${body?.reason ?? ''} ${body?.message ?? ''}`.trim());
    this.status = status;
    this.reason = body?.reason ?? '';
    this.body = body;
  }
}

/** A write refused locally because this replica does not hold the leader lease. */
export class NotLeaderError extends Error {
  override name = 'NotLeaderError';
}

export const isNotFound = (error: unknown): boolean => error instanceof KubeApiError && error.status === 404;
export const isConflict = (error: unknown): boolean => error instanceof KubeApiError && error.status === 409;
export const isGone = (error: unknown): boolean => error instanceof KubeApiError && error.status === 410;

type Query = Record<string, string | number | boolean | undefined>;

interface RequestOptions {
  verb: Verb;
  resource: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  accept?: string;
  timeoutMs?: number;
}

export interface KubeClientOptions {
  /** Called after every request (metrics). */
  onRequest?: (record: RequestRecord) => void;
  /** Writes are refused with NotLeaderError while this returns false (leases are exempt). */
  mayWrite?: () => boolean;
  userAgent?: string;
  /** The field manager of writes (server-side apply's owner of fields); `boxyard-operator` unless given. */
  fieldManager?: string;
  /** The OpenTelemetry tracer the request spans are made with; `@boxyard/operator` unless given. */
  tracerName?: string;
}

const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_ONE = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const REQUEST_TIMEOUT_MS = 30_000;

export class KubeClient {
  readonly server: string;
  private readonly credentials: Credentials;
  private readonly options: KubeClientOptions;
  private readonly agent: https.Agent;
  private readonly watchAgent: https.Agent;
  private headers: { value: Record<string, string>; at: number } | undefined;

  /** The namespace of the credentials (the pod's, the kubeconfig context's), when they name one. */
  readonly namespace: string | undefined;
  private readonly fieldManager: string;

  constructor(credentials: Credentials, options: KubeClientOptions = {}) {
    if (!credentials.server.startsWith('https://')) throw new Error(`refusing a plain-http API server (${credentials.server})`);
    this.server = withoutTrailingSlashes(credentials.server);
    this.credentials = credentials;
    this.options = options;
    this.namespace = credentials.namespace;
    this.fieldManager = options.fieldManager ?? FIELD_MANAGER;
    this.agent = new https.Agent({ ...credentials.tls, keepAlive: true, maxSockets: 32 });
    // Watches hold their connection for minutes: their own pool, so they never starve ordinary requests.
    this.watchAgent = new https.Agent({ ...credentials.tls, keepAlive: false, maxSockets: Infinity });
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }

  /** Authentication headers, refreshed every 10 s (a rotating token, an exec plugin's short-lived credential). */
  private async authHeaders(): Promise<Record<string, string>> {
    if (this.headers && Date.now() - this.headers.at < 10_000) return this.headers.value;
    this.headers = { value: await this.credentials.headers(), at: Date.now() };
    return this.headers.value;
  }

  private guard(verb: Verb, resource: string): void {
    if (WRITE_VERBS.has(verb) && resource !== 'leases' && this.options.mayWrite && !this.options.mayWrite()) {
      throw new NotLeaderError(`not the leader: refusing to ${verb} ${resource}`);
    }
  }

  private url(path: string, query?: Query): string {
    const url = new URL(this.server + path);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    return url.toString();
  }

  /** One request; resolves with the parsed JSON body, rejects with KubeApiError for an error status. */
  async request<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    this.guard(options.verb, options.resource);
    const headers: Record<string, string> = {
      ...(await this.authHeaders()),
      accept: options.accept ?? 'application/json',
      'user-agent': this.options.userAgent ?? 'boxyard-operator',
    };
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const started = process.hrtime.bigint();
    let code = 0;
    try {
      const url = this.url(path, options.query);
      const call = () =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = https.request(url, { method, headers, agent: this.agent }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
            res.on('error', reject);
          });
          req.setTimeout(options.timeoutMs ?? REQUEST_TIMEOUT_MS, () =>
            req.destroy(new Error(`${method} ${path}: no answer within ${options.timeoutMs ?? REQUEST_TIMEOUT_MS} ms`)),
          );
          req.on('error', reject);
          req.end(payload);
        });
      const traced = { method, verb: options.verb, resource: options.resource, url, namespace: namespaceOf(path) };
      const { status, text } = await traceApiCall(this.options.tracerName ?? '@boxyard/operator', traced, headers, async () => {
        const answer = await call();
        return { value: answer, status: answer.status };
      });
      code = status;
      const body = text ? (safeJson(text) as T & KubeStatus) : undefined;
      if (status >= 400)
        throw new KubeApiError(status, body && typeof body === 'object' ? body : { kind: 'Status', message: text.slice(0, 500) }, `${method} ${path}`);
      return body as T;
    } finally {
      this.options.onRequest?.({ verb: options.verb, resource: options.resource, code, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    }
  }

  /** The object, or undefined when it does not exist. */
  async get<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: { metadataOnly?: boolean } = {},
  ): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', objectPath(type, namespace, name), {
        verb: 'get',
        resource: type.plural,
        accept: options.metadataOnly ? METADATA_ONE : undefined,
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async list<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    options: { labelSelector?: string; limit?: number; continue?: string; metadataOnly?: boolean } = {},
  ): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', collectionPath(type, namespace), {
      verb: 'list',
      resource: type.plural,
      accept: options.metadataOnly ? METADATA_LIST : undefined,
      query: { labelSelector: options.labelSelector, limit: options.limit, continue: options.continue },
      timeoutMs: 60_000,
    });
  }

  /** Server-side apply under the operator's field manager; `force` takes over fields another manager set. */
  async apply<T extends KubeObject>(object: KubeObject, options: { subresource?: string; force?: boolean; dryRun?: boolean } = {}): Promise<T> {
    const type = resourceTypeOf(object);
    return this.request<T>('PATCH', objectPath(type, object.metadata.namespace, object.metadata.name, options.subresource), {
      verb: 'apply',
      resource: type.plural,
      body: object,
      contentType: 'application/apply-patch+yaml', // JSON is YAML
      query: { fieldManager: this.fieldManager, force: options.force ?? true, dryRun: options.dryRun ? 'All' : undefined },
    });
  }

  async create<T extends KubeObject>(object: KubeObject): Promise<T> {
    const type = resourceTypeOf(object);
    return this.request<T>('POST', collectionPath(type, object.metadata.namespace), {
      verb: 'create',
      resource: type.plural,
      body: object,
      query: { fieldManager: this.fieldManager },
    });
  }

  async replace<T extends KubeObject>(object: KubeObject): Promise<T> {
    const type = resourceTypeOf(object);
    return this.request<T>('PUT', objectPath(type, object.metadata.namespace, object.metadata.name), {
      verb: 'update',
      resource: type.plural,
      body: object,
      query: { fieldManager: this.fieldManager },
    });
  }

  /** JSON merge patch (RFC 7386): never creates, 404 when the object is gone. */
  async mergePatch<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string, patch: unknown, subresource?: string): Promise<T> {
    return this.request<T>('PATCH', objectPath(type, namespace, name, subresource), {
      verb: 'patch',
      resource: subresource ? `${type.plural}/${subresource}` : type.plural,
      body: patch,
      contentType: 'application/merge-patch+json',
      query: { fieldManager: this.fieldManager },
    });
  }

  /** JSON patch (RFC 6902): operations on paths, for what a merge patch cannot say (replace a whole list or map). */
  async jsonPatch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    operations: readonly { op: string; path: string; value?: unknown }[],
  ): Promise<T> {
    return this.request<T>('PATCH', objectPath(type, namespace, name), {
      verb: 'patch',
      resource: type.plural,
      body: operations,
      contentType: 'application/json-patch+json',
      query: { fieldManager: this.fieldManager },
    });
  }

  /**
   * Deletes; true when it was there. `uid` guards against deleting a newer object of the same name;
   * `gracePeriodSeconds` overrides a pod's own terminationGracePeriodSeconds.
   */
  async delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: { uid?: string; propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'; gracePeriodSeconds?: number } = {},
  ): Promise<boolean> {
    try {
      await this.request('DELETE', objectPath(type, namespace, name), {
        verb: 'delete',
        resource: type.plural,
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          propagationPolicy: options.propagationPolicy ?? 'Background',
          ...(options.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: options.gracePeriodSeconds } : {}),
          ...(options.uid ? { preconditions: { uid: options.uid } } : {}),
        },
      });
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Streams a watch: calls `onEvent` per event until the server ends the stream (resolves) or it fails (rejects;
   * a 410 before the stream starts is a KubeApiError with status 410). `signal` ends it early (resolves).
   */
  async watch<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query: { resourceVersion?: string; labelSelector?: string; fieldSelector?: string; timeoutSeconds: number; metadataOnly?: boolean },
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const path = collectionPath(type, namespace);
    const headers: Record<string, string> = {
      ...(await this.authHeaders()),
      accept: query.metadataOnly ? METADATA_ONE : 'application/json',
      'user-agent': this.options.userAgent ?? 'boxyard-operator',
    };
    const url = this.url(path, {
      watch: 1,
      allowWatchBookmarks: true,
      resourceVersion: query.resourceVersion,
      labelSelector: query.labelSelector,
      fieldSelector: query.fieldSelector,
      timeoutSeconds: query.timeoutSeconds,
    });
    const started = process.hrtime.bigint();
    let code = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        if (signal.aborted) return resolve();
        const req = https.request(url, { method: 'GET', headers, agent: this.watchAgent }, (res) => {
          code = res.statusCode ?? 0;
          if (code !== 200) {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              reject(new KubeApiError(code, (safeJson(text) as KubeStatus | undefined) ?? undefined, `watch ${path}`));
            });
            res.on('error', reject);
            return;
          }
          let buffered = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffered += chunk;
            let newline: number;
            while ((newline = buffered.indexOf('\n')) >= 0) {
              const line = buffered.slice(0, newline);
              buffered = buffered.slice(newline + 1);
              if (!line.trim()) continue;
              const event = safeJson(line) as WatchEvent<T> | undefined;
              if (event?.type) onEvent(event);
            }
          });
          res.on('end', () => resolve());
          res.on('error', (error) => (signal.aborted ? resolve() : reject(error)));
          res.on('close', () => (signal.aborted ? resolve() : reject(new Error(`watch ${path}: connection closed`))));
        });
        // A watch that has been silent past the server's own timeout is a dead connection.
        req.setTimeout((query.timeoutSeconds + 30) * 1000, () => req.destroy(new Error(`watch ${path}: idle for ${query.timeoutSeconds + 30} s`)));
        req.on('error', (error) => (signal.aborted ? resolve() : reject(error)));
        signal.addEventListener('abort', () => req.destroy(), { once: true });
        req.end();
      });
    } finally {
      this.options.onRequest?.({ verb: 'watch', resource: type.plural, code, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    }
  }
}

/** The namespace in an API path (/api/v1/namespaces/<ns>/pods/...), for the span. */
function namespaceOf(path: string): string | undefined {
  const at = path.indexOf('/namespaces/');
  if (at < 0) return undefined;
  const rest = path.slice(at + '/namespaces/'.length);
  const end = rest.indexOf('/');
  // /api/v1/namespaces/<name> is the Namespace object itself, not a namespaced request.
  return end < 0 ? undefined : decodeURIComponent(rest.slice(0, end));
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
