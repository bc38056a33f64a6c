// The CustomResourceDefinitions of the registry's kinds: the fields every kind shares (declared here), storage for
// the kinds that use it, and each kind's own fields, which come from its service (kind.ts and config.ts).
// `node operator/src/crds/generate.ts` writes them to crds/ (the single source kubectl and the chart use) and
// copies them into charts/boxyard/crds/; crds.test.ts fails when either copy drifts from what this file builds.
import { kindSpecProperties, type ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { boolean, integer, object, PULL_POLICY, resources, string, stringMap, type JsonSchema as Schema } from '@boxyard/kit/service/cluster-schema.ts';
import { kinds as registryKinds } from '@boxyard/registry/kinds.ts';
import { USERNAME_PATTERN } from '@boxyard/kit/config/service-sections.ts';
import { GROUP, VERSION } from '@boxyard/kit/kube/resources.ts';

const immutable = (what: string): Schema => ({
  'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: `${what} is immutable: the data lives there; create a new resource to move it` }],
});

const secretKeyRef = (description: string, defaultKey: string): Schema =>
  object(
    description,
    {
      name: string('Name of a Secret in the same namespace.', { minLength: 1, maxLength: 253 }),
      key: string('Key in the Secret.', { default: defaultKey, minLength: 1, maxLength: 253 }),
    },
    { required: ['name'] },
  );

/**
 * Fields every kind has: the Deployment, database, auth, exposure, limits and what happens to data on deletion.
 * One long declaration on purpose: it is the CRD text users read in `kubectl explain`, field by field, in order.
 */
export function commonSpec(schemaDefault: string, limits: RateLimitDefaults = { max_requests: 100, window_seconds: 600 }): Record<string, Schema> {
  return {
    replicas: integer('Number of pods. Above 1 a PodDisruptionBudget keeps at least one serving during node drains.', { default: 1, minimum: 0, maximum: 100 }),
    terminationGracePeriodSeconds: integer(
      'How long a stopping pod (rolling update, node drain) may take: it leaves the Service first (a 5 s preStop wait), then finishes what is in flight — box downloads and uploads — and is killed when this runs out. The default, 600, lets a 10 GiB box finish at ~18 MB/s.',
      { default: 600, minimum: 15, maximum: 86_400 },
    ),
    image: string("Container image of the service (default: the operator's own image; all Boxyard services share one).", { maxLength: 512 }),
    imagePullPolicy: PULL_POLICY,
    imagePullSecrets: {
      type: 'array',
      description: 'Secrets for pulling the image from a private registry.',
      items: object('A docker-registry Secret.', { name: string('Secret name.', { minLength: 1 }) }, { required: ['name'] }),
    },
    resources: resources('CPU and memory of each pod.', { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } }),
    podAnnotations: stringMap('Extra annotations on the pods.'),
    nodeSelector: stringMap('Node labels the pods must run on.'),
    tolerations: {
      type: 'array',
      description: 'Tolerations of the pods (core/v1 Toleration).',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
    affinity: { type: 'object', description: 'Affinity of the pods (core/v1 Affinity).', 'x-kubernetes-preserve-unknown-fields': true },
    logging: object(
      'Service logs.',
      { level: string('Log level.', { enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }) },
      { default: {} },
    ),
    database: object(
      "PostgreSQL holding the service's metadata. The operator checks that the URL connects before rolling out.",
      {
        secretRef: secretKeyRef('Secret key holding the postgres:// connection URL.', 'url'),
        schema: string('Schema the service keeps its tables in (immutable). Two resources sharing a database need different schemas.', {
          default: schemaDefault,
          pattern: '^[a-z_][a-z0-9_]{0,62}$',
          maxLength: 63,
          ...immutable('database.schema'),
        }),
        poolSize: integer('Connections per pod.', { default: 10, minimum: 1, maximum: 100 }),
      },
      { required: ['secretRef'] },
    ),
    auth: object(
      'Sign-in: the session signing key, the first admin account and, optionally, an OpenID provider whose (DPoP-bound) access tokens the service accepts.',
      {
        sessionSecretRef: secretKeyRef(
          'Secret key holding the session signing key (at least 32 characters). Default: generated once into the Secret <name>-<service>-session and never overwritten.',
          'secret',
        ),
        sessionTTLSeconds: integer('Lifetime of a session token.', { default: 3600, minimum: 60, maximum: 2_592_000 }),
        adminUsername: string('Username of the first admin account, created on first start (letters, digits, ".", "_" and "-").', {
          default: 'admin',
          minLength: 1,
          maxLength: 64,
          pattern: USERNAME_PATTERN.source,
        }),
        adminPasswordSecretRef: secretKeyRef(
          "Secret key holding the first admin's password. Default: generated once into the Secret <name>-<service>-admin (key password).",
          'password',
        ),
        oidc: object(
          'An OpenID provider whose JWT access tokens are accepted (RFC 9068), optionally DPoP-bound (RFC 9449).',
          {
            issuer: string('Issuer URL; its discovery document names the signing keys.', { pattern: '^https?://', maxLength: 2048 }),
            audience: string('Audience the access tokens must carry.', { minLength: 1, maxLength: 512 }),
            dpop: object(
              'Proof-of-possession of access tokens.',
              {
                required: boolean('Refuse bearer tokens: every access token must be DPoP-bound.', false),
                proofMaxAgeSeconds: integer('How old a DPoP proof may be.', { default: 300, minimum: 10, maximum: 3600 }),
              },
              { default: {} },
            ),
          },
          { required: ['issuer', 'audience'] },
        ),
      },
      { default: {} },
    ),
    publicURL: string('The address users reach the service at (default: https://<ingress host>, or the in-cluster Service URL).', {
      pattern: '^https?://[^\\s]+$',
      maxLength: 2048,
    }),
    ingress: object(
      'Exposes the service through an Ingress when set.',
      {
        host: string('Host name of the service.', { pattern: '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$', maxLength: 253 }),
        className: string("IngressClass to use (default: the cluster's default class).", { maxLength: 253 }),
        path: string('Path prefix routed to the service.', { default: '/', pattern: '^/', maxLength: 1024 }),
        annotations: stringMap('Annotations of the Ingress (e.g. cert-manager.io/cluster-issuer).'),
        tls: object(
          'Terminate TLS at the Ingress.',
          { secretName: string('kubernetes.io/tls Secret for the host.', { minLength: 1, maxLength: 253 }) },
          { required: ['secretName'] },
        ),
      },
      {
        'x-kubernetes-validations': [
          {
            rule: '!has(self.tls) || has(self.host)',
            message: 'ingress.tls requires ingress.host: a certificate is issued for a host name',
            fieldPath: '.tls',
          },
        ],
      },
    ),
    rateLimiting: object(
      'Request rate limit per client, shared across replicas.',
      {
        enabled: boolean('Apply the limit.', true),
        maxRequests: integer('Requests allowed per window.', { default: limits.max_requests, minimum: 1 }),
        windowSeconds: integer('Window length.', { default: limits.window_seconds, minimum: 1 }),
      },
      { default: {} },
    ),
    networkPolicy: object(
      'A NetworkPolicy that admits traffic to the service port only.',
      {
        enabled: boolean('Create the NetworkPolicy.', true),
        from: {
          type: 'array',
          description: 'Who may connect (networking.k8s.io/v1 NetworkPolicyPeer); empty: anyone, on the service port only.',
          items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        },
      },
      { default: {} },
    ),
    monitoring: object(
      'Prometheus scraping of /metrics.',
      {
        serviceMonitor: object(
          'A ServiceMonitor for the Prometheus Operator, created only when its CRD (monitoring.coreos.com) is installed.',
          {
            enabled: boolean('Create the ServiceMonitor when possible.', true),
            interval: string('Scrape interval.', { default: '30s', pattern: '^[0-9]+(ms|s|m|h)$' }),
          },
          { default: {} },
        ),
        tracing: object(
          "OpenTelemetry traces (OTLP) of the service's pods, set as the standard OTEL_* variables. Unset fields come from the operator's own OTEL_* settings (the chart's `tracing` values); with no endpoint anywhere, nothing is exported.",
          {
            enabled: boolean('Export traces when an endpoint is known.', true),
            endpoint: string('OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT), e.g. http://otel-collector.observability:4318.', {
              pattern: '^https?://[^/\\s]+(/.*)?$',
              maxLength: 2048,
            }),
            sampleRatio: {
              type: 'number',
              minimum: 0,
              maximum: 1,
              description: "Share of new traces kept (parentbased_traceidratio); default 1, or the operator's.",
            },
          },
          { default: {} },
        ),
      },
      { default: {} },
    ),
    bootstrap: object(
      'How a new resource starts (immutable).',
      {
        fromBackup: object(
          'Restore a Completed Backup (same namespace) into the empty database schema and storage before the service starts; a schema or storage that holds data is refused (Stalled, reason TargetNotEmpty), never overwritten.',
          { name: string('Name of the Backup.', { minLength: 1, maxLength: 253 }) },
          { required: ['name'] },
        ),
      },
      immutable('bootstrap'),
    ),
    deletionPolicy: string(
      'What happens to the data outside the cluster when this resource is deleted: Retain keeps the database schema and stored objects (and the generated Secrets, so a new resource of the same name finds them); Delete drops the schema and deletes the stored objects (and the bucket, if the operator created it).',
      { enum: ['Retain', 'Delete'], default: 'Retain' },
    ),
  };
}

export const STORAGE: Schema = object(
  'S3-compatible object storage (MinIO or any S3). The operator checks that the bucket exists, or creates it, before rolling out.',
  {
    endpoint: string('http(s)://host[:port] of the S3 API.', { pattern: '^https?://[^/\\s]+/?$', maxLength: 2048 }),
    bucket: string('Bucket name (immutable).', { pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$', maxLength: 63, ...immutable('storage.bucket') }),
    region: string('Bucket region.', { default: 'us-east-1', maxLength: 64 }),
    prefix: string(
      "Key prefix inside the bucket (immutable); empty: the bucket is this resource's alone. Resources sharing a bucket need different prefixes.",
      {
        default: '',
        pattern: "^$|^[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*$",
        maxLength: 512,
        ...immutable('storage.prefix'),
      },
    ),
    credentialsSecretRef: object(
      'Secret with the access key pair.',
      {
        name: string('Name of a Secret in the same namespace.', { minLength: 1, maxLength: 253 }),
        accessKeyKey: string('Key holding the access key id.', { default: 'accessKey', minLength: 1 }),
        secretKeyKey: string('Key holding the secret access key.', { default: 'secretKey', minLength: 1 }),
      },
      { required: ['name'] },
    ),
    createBucket: boolean('Create the bucket when it does not exist (it is then deleted with deletionPolicy Delete).', true),
  },
  { required: ['endpoint', 'bucket', 'credentialsSecretRef'] },
);

/** status.conditions of a kind: kstatus's Ready, Reconciling and Stalled, as `description` says for that kind. */
export const conditionsSchema = (description: string): Schema => ({
  type: 'array',
  description,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  items: object(
    'A condition.',
    {
      type: string('Condition type.', { maxLength: 316 }),
      status: string('True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
      reason: string('Machine-readable reason (CamelCase).', { maxLength: 1024 }),
      message: string('What happened and what to do about it.', { maxLength: 32768 }),
      lastTransitionTime: string('When the status last changed.', { format: 'date-time' }),
      observedGeneration: integer('Generation the condition was computed for.', { format: 'int64', minimum: 0 }),
    },
    { required: ['type', 'status', 'lastTransitionTime'] },
  ),
});

const CONDITIONS = conditionsSchema('Ready, Reconciling and Stalled (kstatus): Ready is True when the Deployment is Available at the current generation.');

const STATUS: Schema = object('Observed state, written by the operator.', {
  observedGeneration: integer('The generation of the spec the status describes.', { format: 'int64' }),
  conditions: CONDITIONS,
  url: string('Where users reach the service.'),
  replicas: integer('Pods of the current Deployment.'),
  readyReplicas: integer('Pods ready to serve.'),
  updatedReplicas: integer('Pods running the current spec.'),
  selector: string('Label selector of the pods (for the scale subresource).'),
  image: string('Image the pods run.'),
  sessionSecretName: string('Secret holding the session signing key.'),
  adminSecretName: string("Secret holding the first admin's password (key `password`, or the key named in spec.auth.adminPasswordSecretRef)."),
  storage: object('What the operator did in object storage.', {
    bucketCreated: { type: 'boolean', description: 'Written by earlier versions and ignored: it did not say where the bucket was created.' },
    createdBuckets: {
      type: 'array',
      maxItems: 16,
      description: 'Buckets the operator created for this resource; deletionPolicy Delete removes only these, and only while the spec still points at them.',
      items: object(
        'A bucket the operator created.',
        {
          endpoint: string('host:port of the object storage.', { maxLength: 512 }),
          bucket: string('The bucket.', { maxLength: 63 }),
          accessKeyDigest: string('SHA-256 (first 16 hex digits) of the access key id it was created with.', { maxLength: 16 }),
        },
        { required: ['endpoint', 'bucket', 'accessKeyDigest'] },
      ),
    },
  }),
  bootstrap: object('What spec.bootstrap did.', {
    restoredFrom: string('The Backup restored into this resource before its service first started.'),
    location: string('Where that backup was read from.'),
    restoredAt: string('When the restore finished.', { format: 'date-time' }),
  }),
  database: object('What the operator did in PostgreSQL.', {
    createdSchemas: {
      type: 'array',
      maxItems: 16,
      description:
        'Schemas the operator created for this resource; deletionPolicy Delete drops only these, and only while the spec still points at them. A schema that existed before is never dropped.',
      items: object(
        'A schema the operator created.',
        { database: string('host:port/database.', { maxLength: 1024 }), schema: string('The schema.', { maxLength: 63 }) },
        { required: ['database', 'schema'] },
      ),
    },
  }),
});

const PRINTER_COLUMNS = [
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
  { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
  { name: 'Available', type: 'integer', jsonPath: '.status.readyReplicas' },
  { name: 'URL', type: 'string', jsonPath: '.status.url' },
  { name: 'Policy', type: 'string', jsonPath: '.spec.deletionPolicy', priority: 1 },
  { name: 'Image', type: 'string', jsonPath: '.status.image', priority: 1 },
  { name: 'Message', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].message', priority: 1 },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

export interface KindDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: Schema;
}

/** "BoxRepository" -> "box repository". */
const words = (kind: string) => kind.replace(/(?<=[a-z])(?=[A-Z])/g, ' ').toLowerCase();

interface RateLimitDefaults {
  max_requests: number;
  window_seconds: number;
}

/** The service's own rate-limit defaults (what its config gives without the key), so the CRD defaults the same. */
export function rateLimitDefaults(kind: ClusterKind): RateLimitDefaults {
  const section = (kind.configSchema as unknown as { shape: { rate_limiting: { parse(value: unknown): RateLimitDefaults } } }).shape.rate_limiting;
  const { max_requests, window_seconds } = section.parse(undefined);
  return { max_requests, window_seconds };
}

/** The kind's own spec fields; its `rateLimiting` fields (the box repository's ceilings) join the common ones. */
export function ownSpecProperties(
  kind: ClusterKind,
  common: Record<string, Schema> = commonSpec(kind.databaseSchema, rateLimitDefaults(kind)),
): Record<string, Schema> {
  const own = kindSpecProperties(kind);
  const limits = own.rateLimiting;
  if (limits) {
    const base = common.rateLimiting!;
    own.rateLimiting = { ...base, properties: { ...(base.properties as Record<string, Schema>), ...(limits.properties as Record<string, Schema>) } };
  }
  return own;
}

function specProperties(kind: ClusterKind): Record<string, Schema> {
  const common = commonSpec(kind.databaseSchema, rateLimitDefaults(kind));
  return { ...common, ...(kind.storage ? { storage: STORAGE } : {}), ...ownSpecProperties(kind, common) };
}

/** A kind's CRD: the common fields, storage where the service uses it, then the service's own fields. */
export function kindDefinition(kind: ClusterKind): KindDefinition {
  return {
    kind: kind.kind,
    plural: kind.plural,
    singular: kind.singular,
    shortNames: kind.shortNames,
    description: kind.description,
    spec: object(`Desired state of the ${words(kind.kind)}.`, specProperties(kind), {
      required: ['database', ...(kind.storage === true ? ['storage'] : [])],
      'x-kubernetes-validations': [
        {
          rule: 'has(self.bootstrap) == has(oldSelf.bootstrap)',
          message: 'spec.bootstrap is set when the resource is created, never added or removed later: it restores into a new resource only',
          fieldPath: '.bootstrap',
        },
      ],
    }),
  };
}

export const kinds: KindDefinition[] = registryKinds.map(kindDefinition);

export function crdFor(definition: KindDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${definition.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'boxyard', 'app.kubernetes.io/part-of': 'boxyard' },
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        shortNames: definition.shortNames,
        categories: ['boxyard'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: {
            status: {},
            scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' },
          },
          additionalPrinterColumns: PRINTER_COLUMNS,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: definition.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: definition.spec,
                status: STATUS,
              },
              'x-kubernetes-validations': [
                {
                  rule: 'size(self.metadata.name) <= 40',
                  message: 'metadata.name must be at most 40 characters: the names of the generated objects add a suffix',
                },
              ],
            },
          },
        },
      ],
    },
  };
}
