// The custom resources as the operator reads them. The specs' types are generated from the CRD schemas
// (generated-types.ts): defaults are filled in by the apiserver, so fields with a default are required there.
import type { Condition, KubeObject } from '@boxyard/kit/kube/types.ts';

import type { BoxRepositorySpec, CommonSpec, FileShareSpec, StorageSpec, TerminalPoolSpec } from './generated-types.ts';

export type { BoxRepositorySpec, CommonSpec, FileShareSpec, Quantity, StorageSpec, TerminalPoolSpec } from './generated-types.ts';
export type Resources = CommonSpec['resources'];
export type SecretKeyRef = CommonSpec['database']['secretRef'];
export type PullPolicy = CommonSpec['imagePullPolicy'];

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
  /** spec.bootstrap.fromBackup, once restored (operator/src/backups/bootstrap.ts). */
  bootstrap?: { restoredFrom?: string; location?: string; restoredAt?: string };
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
