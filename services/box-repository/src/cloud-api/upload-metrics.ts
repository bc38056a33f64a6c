// A direct upload's bytes reach the object store without passing the instrumented store (kit
// metrics/storage-metrics.ts), so its callback counts them in the same series as every other upload: bytes stored,
// and uploads that stored nothing by reason.
import type { Counter, Registry } from '@prometheus-io/client';

export interface DirectUploadMetrics {
  stored(size: number): void;
  failed(reason: 'too_large' | 'checksum_mismatch'): void;
}

export function directUploadMetrics(registry: Registry): DirectUploadMetrics {
  const bytes = registry.getSingleMetric('boxyard_upload_bytes_total') as Counter | undefined;
  const failures = registry.getSingleMetric('boxyard_upload_failures_total') as Counter<'reason'> | undefined;
  return { stored: (size) => bytes?.inc(size), failed: (reason) => failures?.inc({ reason }) };
}
