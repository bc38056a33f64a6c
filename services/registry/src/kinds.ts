// The cluster kinds of Boxyard's services, in the order the operator reconciles them: each registered service's
// `kind` (declared in its kind.ts). The operator, the CRD generator, the chart's generators and the tests read it.
import type { ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { services } from './services.ts';

export const kinds: ClusterKind[] = services.flatMap((service) => (service.kind ? [service.kind] : []));

export const findKind = (kind: string): ClusterKind | undefined => kinds.find((k) => k.kind === kind);
