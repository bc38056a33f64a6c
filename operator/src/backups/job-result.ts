// What a finished backup or restore Job reports: `boxyard backup|restore --result-file /dev/termination-log`
// writes one line of JSON, which the kubelet keeps as the container's termination message (or, when the process
// died before writing it, the last lines of its log: FallbackToLogsOnError).
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';

export type JobObject = KubeObject & {
  status?: { succeeded?: number; failed?: number; completionTime?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
};
type PodObject = KubeObject & { status?: { containerStatuses?: { state?: { terminated?: { message?: string; exitCode?: number } } }[] } };

/** services/boxyard/src/backup/cli.ts BackupResult. */
export interface RunResult {
  ok?: boolean;
  location?: string;
  bytes?: number;
  objects?: number;
  boxyard_version?: string;
  error?: string;
}

export const jobFinished = (job: JobObject, type: 'Complete' | 'Failed') => job.status?.conditions?.find((c) => c.type === type && c.status === 'True');

export async function jobResult(client: Pick<KubeClient, 'list'>, namespace: string, job: string): Promise<RunResult | undefined> {
  const pods = await client.list<PodObject>(resources.pod, namespace, { labelSelector: `batch.kubernetes.io/job-name=${job}` });
  for (const pod of pods.items) {
    const message = pod.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim();
    if (!message) continue;
    try {
      return JSON.parse(message) as RunResult;
    } catch {
      return { ok: false, error: message.split('\n').slice(-5).join('\n') };
    }
  }
  return undefined;
}
