// The custom resources as the operator reads them: defaults are filled in by the apiserver (structural schema
// defaults), so fields with a default are required here. Mirrors definitions.ts.
import type { Condition, KubeObject } from '../kube/types.ts';

export type Quantity = string | number;
export interface Resources {
  requests?: Record<string, Quantity>;
  limits?: Record<string, Quantity>;
}
export interface SecretKeyRef {
  name: string;
  key: string;
}
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface CommonSpec {
  replicas: number;
  image?: string;
  imagePullPolicy: PullPolicy;
  imagePullSecrets?: { name: string }[];
  resources: Resources;
  podAnnotations?: Record<string, string>;
  nodeSelector?: Record<string, string>;
  tolerations?: Record<string, unknown>[];
  affinity?: Record<string, unknown>;
  logging: { level: string };
  database: { secretRef: SecretKeyRef; schema: string; poolSize: number };
  auth: {
    sessionSecretRef?: SecretKeyRef;
    sessionTTLSeconds: number;
    adminUsername: string;
    adminPasswordSecretRef?: SecretKeyRef;
    oidc?: { issuer: string; audience: string; dpop: { required: boolean; proofMaxAgeSeconds: number } };
  };
  publicURL?: string;
  ingress?: { host?: string; className?: string; path: string; annotations?: Record<string, string>; tls?: { secretName: string } };
  rateLimiting: { enabled: boolean; maxRequests: number; windowSeconds: number };
  networkPolicy: { enabled: boolean; from?: Record<string, unknown>[] };
  monitoring: { serviceMonitor: { enabled: boolean; interval: string }; tracing?: { enabled: boolean; endpoint?: string; sampleRatio?: number } };
  deletionPolicy: 'Retain' | 'Delete';
}

export interface StorageSpec {
  endpoint: string;
  bucket: string;
  region: string;
  prefix: string;
  credentialsSecretRef: { name: string; accessKeyKey: string; secretKeyKey: string };
  createBucket: boolean;
}

export interface BoxRepositorySpec extends CommonSpec {
  storage: StorageSpec;
  uploads: { maxBytes: number; stallTimeoutSeconds: number };
  downloadLinks: { ttlSeconds: number };
  signUp: 'open' | 'invited' | 'off';
}

export interface FileShareSpec extends CommonSpec {
  storage: StorageSpec;
  uploads: { maxBytes: number };
  events: { heartbeatSeconds: number; retentionHours: number };
}

export interface TerminalPoolSpec extends CommonSpec {
  sessionPod: {
    image?: string;
    imagePullPolicy: PullPolicy;
    shell: string;
    resources: Resources;
    readyTimeoutSeconds: number;
    egress?: { clusterDNS?: boolean; internet?: boolean; excludedCIDRs?: string[]; allow?: Record<string, unknown>[] };
  };
  sessions: {
    idleTimeoutSeconds: number;
    maxLifetimeSeconds: number;
    reattachGraceSeconds: number;
    perUserLimit: number;
    globalLimit: number;
    scrollbackBytes: number;
  };
  allowedOrigins?: string[];
}

export interface ServiceStatus {
  observedGeneration?: number;
  conditions?: Condition[];
  url?: string;
  replicas?: number;
  readyReplicas?: number;
  updatedReplicas?: number;
  selector?: string;
  image?: string;
  sessionSecretName?: string;
  adminSecretName?: string;
  /** Buckets the operator created for this resource, and where (deletionPolicy Delete removes only these). */
  storage?: { bucketCreated?: boolean; createdBuckets?: CreatedBucket[] };
  /** Schemas the operator created for this resource, and in which database. */
  database?: { createdSchemas?: CreatedSchema[] };
}

/** A bucket the operator made: the endpoint (`host:port`), the bucket, and a digest of the access key id it used. */
export interface CreatedBucket {
  endpoint: string;
  bucket: string;
  accessKeyDigest: string;
}

/** A schema the operator made: the database (`host:port/database`) and the schema. */
export interface CreatedSchema {
  database: string;
  schema: string;
}

export type ServiceSpec = BoxRepositorySpec | FileShareSpec | TerminalPoolSpec;

export interface ServiceResource<S extends CommonSpec = ServiceSpec> extends KubeObject {
  spec: S;
  status?: ServiceStatus;
}

export const hasStorage = (spec: CommonSpec): spec is CommonSpec & { storage: StorageSpec } => 'storage' in spec && spec.storage !== undefined;
