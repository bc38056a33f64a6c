// The terminal service's configuration: the shared sections of the config contract plus `sessions`,
// `allowed_origins` and `backend`. Every key has a default except the secrets (and the pod image on Kubernetes).
import { serviceSections, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

/** /metrics listens apart from the public port (loopback by default). */
export const DEFAULT_METRICS_PORT = 9302;
export const DEFAULT_PORT = 3002;

const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?([EPTGMK]i?|[munk])?$/, 'must be a Kubernetes quantity (e.g. 500m, 256Mi)');
const resourceList = z.partialRecord(z.enum(['cpu', 'memory', 'ephemeral-storage']), quantity);
const labelKey = z.string().regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be a label key');
const cidr = z
  .string()
  .regex(/^(\d{1,3}(\.\d{1,3}){3}\/\d{1,2}|[0-9a-fA-F:][0-9a-fA-F]*:[0-9a-fA-F:]*\/\d{1,3})$/, 'must be a CIDR range (10.96.0.0/12, fd00::/8)');
const labelValue = z.string().regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, 'must be a label value');

export const sessionsSchema = z
  .strictObject({
    /** No keystroke, resize or attach for this long stops the session. */
    idle_timeout_seconds: z.number().int().positive().default(1800).describe('A session without input or output for this long is stopped.'),
    /** A session never lives longer than this, active or not. */
    max_lifetime_seconds: z.number().int().positive().default(28_800).describe('Absolute lifetime of a session.'),
    /** With no socket attached for this long, the session is stopped. */
    reattach_grace_seconds: z.number().int().positive().default(300).describe('How long a session survives without an attached socket.'),
    per_user_limit: z.number().int().positive().default(3).describe('Concurrent sessions per user.'),
    global_limit: z.number().int().positive().default(100).describe('Concurrent sessions in the pool.'),
    /** Attached WebSockets per user (tabs on their sessions) and in all, per replica: 429 / 503 beyond. */
    max_sockets_per_user: z.number().int().min(1).max(10_000).default(20),
    max_sockets: z.number().int().min(1).max(1_000_000).default(1000),
    /** Output kept per session and replayed to a socket that attaches. */
    scrollback_bytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1_048_576)
      .default(1_048_576)
      .describe('Output kept for replay on reattach.'),
    /**
     * How often every attached socket's credential is checked again (sign-out, expiry, account changes arrive at
     * once through PostgreSQL notifications; this bounds what a missed one could cost).
     */
    access_recheck_seconds: z.number().int().positive().max(3600).default(30),
    /** How often the reaper checks live sessions (expiry, idle, grace, vanished agents). */
    reaper_interval_seconds: z.number().int().positive().max(3600).default(10),
    /** Ended sessions stay listed (with their exit code) this long, then are deleted. */
    retention_hours: z.number().int().min(0).default(24),
  })
  .prefault({})
  .describe('Session limits.');

export const recordingSchema = z
  .strictObject({
    /** `on`: sessions are recorded when the store takes it; `required`: a session whose recording fails is ended (close code 4305). */
    mode: z
      .enum(['off', 'on', 'required'])
      .default('off')
      .describe('Record sessions as asciicast v2: off, on, or required (a session whose recording cannot be written is ended).'),
    /** What was typed, too (passwords typed at a prompt included): off unless asked for. */
    input: z.boolean().default(false).describe('Record typed input as well as output.'),
    /** Recordings and audit rows older than this are deleted. */
    retention_days: z.number().int().min(1).max(3650).default(30).describe('Days recordings and audit rows are kept.'),
    /** Beyond this the recording stops (with a marker); the session goes on. */
    max_bytes: z.number().int().min(65_536).max(17_179_869_184).default(268_435_456).describe('Size cap of one recording (bytes of asciicast).'),
    /** Recorded output is written at least this often (what a gateway crash can lose at most). */
    flush_seconds: z.number().min(0.1).max(60).default(1),
  })
  .prefault({})
  .describe('Session recording and its retention.');

const kubernetesSchema = z.strictObject({
  /** Namespace of the session pods; default: the gateway's own namespace (in a cluster), else `default`. */
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a namespace name')
    .optional(),
  /** Image with the agent (`boxyard terminal-agent`) and the shell. */
  image: z.string().min(1),
  image_pull_policy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
  shell: z.string().min(1).default('/bin/bash'),
  resources: z
    .strictObject({
      requests: resourceList.default({ cpu: '100m', memory: '128Mi' }),
      limits: resourceList.default({ cpu: '1', memory: '512Mi' }),
    })
    .prefault({}),
  pod_ready_timeout_seconds: z.number().int().positive().default(120),
  /** The agent's command in the image. */
  agent_command: z.array(z.string().min(1)).min(1).default(['boxyard', 'terminal-agent']),
  agent_port: z.number().int().min(1).max(65535).default(7681),
  run_as_user: z.number().int().min(1).default(1000),
  run_as_group: z.number().int().min(1).default(1000),
  /** A kubeconfig file; default: the in-cluster service account (or $KUBECONFIG / ~/.kube/config outside). */
  kubeconfig: z.string().optional(),
  /** Create the NetworkPolicy that admits only the gateway's pods to the session pods (needs RBAC on networkpolicies). */
  network_policy: z.boolean().default(true),
  /** Labels of the gateway's pods, the only ones the NetworkPolicy admits. */
  gateway_pod_labels: z.record(labelKey, labelValue).default({ 'app.kubernetes.io/name': 'terminal' }),
  /** Namespace of the gateway's pods when it differs from the session pods' namespace. */
  gateway_namespace: z.string().optional(),
  /**
   * The pool's name (the operator sets its TerminalPool's): session pods carry it as the label `boxyard.io/pool` and
   * the NetworkPolicy is the pool's own, so pools sharing a namespace never fence each other's pods.
   */
  pool: labelValue.min(1).max(40).optional(),
  /**
   * A persistent home per user: a PersistentVolumeClaim `boxyard-home-[<pool>-]<user id>` created at the user's
   * first session (labelled with pool and user, kept when the user is deleted) and mounted at `mount_path` in every
   * session pod of theirs. Unset: homes live and die with the pod.
   */
  home: z
    .strictObject({
      size: quantity.describe("Requested size of each user's volume, e.g. 1Gi."),
      /** Default: the cluster's default StorageClass. */
      storage_class: z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a StorageClass name')
        .optional(),
      /** ReadWriteOnce keeps a user's concurrent sessions on one node (pod affinity); ReadWriteMany lets them spread. */
      access_mode: z.enum(['ReadWriteOnce', 'ReadWriteMany']).default('ReadWriteOnce'),
      mount_path: z
        .string()
        .regex(/^\/[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, 'must be an absolute path')
        .default('/home/user'),
    })
    .optional(),
  /** Where shells may connect to (the NetworkPolicy's Egress part; needs `network_policy`). */
  egress: z
    .strictObject({
      /** DNS (UDP and TCP 53) to the cluster's DNS pods (namespace kube-system, label k8s-app=kube-dns). */
      cluster_dns: z.boolean().default(true),
      /** Any public address: everything but the private, shared (100.64/10) and link-local ranges (169.254/16: the cloud metadata address). */
      internet: z.boolean().default(true),
      /** More ranges kept out of `internet` (the cluster's pod and service ranges when they are not private). */
      excluded_cidrs: z.array(cidr).max(64).default([]),
      /** More NetworkPolicy egress rules ({to, ports}, as in the Kubernetes API), e.g. a package mirror inside the cluster. */
      allow: z.array(z.record(z.string(), z.unknown())).max(64).default([]),
    })
    .prefault({}),
});

export const backendSchema = z
  .strictObject({
    kind: z.enum(['local', 'kubernetes']).default('local'),
    local: z
      .strictObject({
        shell: z.string().min(1).default('/bin/bash'),
        /** Where the agents' unix sockets live (0700); default: a directory under the OS temp dir. */
        socket_dir: z.string().min(1).optional(),
        /**
         * Agent processes kept started ahead of time, each waiting for one session (it learns the owner only then,
         * and is replaced): a start then answers in a fraction of the time. 0 starts every agent on demand.
         */
        warm_agents: z.number().int().min(0).max(8).default(1),
        /**
         * Non-admins' shells when the server cannot switch users (not root): each in a bubblewrap sandbox with a
         * home of its own (see backends/local-sandbox.ts). Root servers use OS accounts instead.
         */
        sandbox: z
          .strictObject({
            enabled: z
              .boolean()
              .default(true)
              .describe('Run non-admin shells in a bubblewrap sandbox when the server cannot switch users (else they are refused).'),
            /** Where each user's home lives, `<home_base>/<user id>`; default: `<state_dir>/homes`. */
            home_base: z.string().regex(/^\//, 'must be an absolute path').optional(),
            /**
             * Shells share the host's network, loopback and abstract unix sockets included (an X server or D-Bus of
             * the server's uid would take them as that user): off by default, on for a server of its own account.
             */
            network: z.boolean().default(false),
            /** Size of each session's private /tmp (memory). */
            tmp_size_mb: z.number().int().min(1).max(65_536).default(256),
            /** The bubblewrap binary (Debian's `bubblewrap` package). */
            bwrap: z.string().min(1).default('bwrap'),
          })
          .prefault({}),
        /** The OS accounts shells run as when the server can switch users (see backends/local-accounts.ts). */
        accounts: z
          .strictObject({
            /** Prefix of the accounts created per terminal user: `<prefix><12 hex digits of the user id>`. */
            prefix: z
              .string()
              .regex(/^[a-z_][a-z0-9_-]{0,19}$/, 'must start a user name: a-z, 0-9, _ or -, at most 20 characters')
              .default('boxyard-'),
            /** Where created accounts' homes go. */
            home_base: z.string().regex(/^\//, 'must be an absolute path').default('/home'),
            /** Terminal username (local accounts) or `oidc:<issuer>#<subject>` (provider users) → an existing OS account (takes precedence over creating one). */
            map: z.record(z.string().min(1), z.string().regex(/^[a-z_][a-z0-9_.-]*\$?$/i, 'must be a user name')).default({}),
          })
          .prefault({}),
      })
      .prefault({}),
    kubernetes: kubernetesSchema.optional(),
  })
  .prefault({})
  .superRefine((backend, ctx) => {
    if (backend.kind === 'kubernetes' && !backend.kubernetes) {
      ctx.addIssue({ code: 'custom', path: ['kubernetes'], message: 'is required when backend.kind is kubernetes (at least kubernetes.image)' });
    }
  });

const origin = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value.replace(/\/$/, '');
  } catch {
    return false;
  }
}, 'must be an origin: scheme://host[:port], no path');

export const terminalConfigSchema = z.strictObject({
  ...serviceSections({ name: 'terminal', port: DEFAULT_PORT, schema: 'terminal' }),
  sessions: sessionsSchema,
  /** Origins allowed on the WebSocket upgrade and on state-changing requests; default: the service's own. */
  allowed_origins: z.array(origin).optional(),
  backend: backendSchema,
  recording: recordingSchema,
  /** Where recordings are written (local directory or S3); default: `<state_dir>/recordings` on local disk. */
  storage: storageSchema.optional(),
  /** Where a generated self-signed certificate is kept (server.tls.enabled without cert/key). */
  state_dir: z.string().optional(),
});

export type TerminalConfig = z.output<typeof terminalConfigSchema>;
export type SessionsConfig = TerminalConfig['sessions'];
export type RecordingConfig = TerminalConfig['recording'];
export type KubernetesBackendConfig = z.output<typeof kubernetesSchema>;
