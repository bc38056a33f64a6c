// The cluster kinds of Boxyard's services, in the order the operator reconciles them: the one list the operator,
// the CRD generator, the chart's generators and the tests read. Only each service's kind.ts is imported (its
// config schema and nothing of its routes), so reading the kinds does not load the services.
import type { ClusterKind } from '@boxyard/kit/service/cluster-kind.ts';
import { clusterKind as boxRepository } from '@boxyard/box-repository/kind.ts';
import { clusterKind as fileShare } from '@boxyard/file-share/kind.ts';
import { clusterKind as terminalPool } from '@boxyard/terminal/kind.ts';

export const kinds: ClusterKind[] = [boxRepository, fileShare, terminalPool];

export const findKind = (kind: string): ClusterKind | undefined => kinds.find((k) => k.kind === kind);
