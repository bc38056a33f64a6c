// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: a candidate takes the lease only when
// its holder has not renewed it for a full lease duration (judged by this process's own clock, from when it last saw
// the record change, so clock skew between nodes does not matter); the leader renews every retry period and steps
// down when it could not renew for the renew deadline, which is shorter than the lease duration, so its writes stop
// before anyone else may start. All updates carry the resourceVersion: two candidates cannot both win.
import { isConflict, isNotFound, type KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { sleep } from './sleep.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: (message: string) => void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
type Lease = KubeObject & { spec?: LeaseSpec };

/** RFC 3339 with microseconds: the MicroTime format the Lease fields require. */
export const microTime = (date = new Date()): string => date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly options: Required<Omit<LeaderElectionOptions, 'log'>> & Pick<LeaderElectionOptions, 'log'>;
  private observed: { record: string; at: number } | undefined;
  private lastRenew = 0;
  private leading = false;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.client = client;
    const defined = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as LeaderElectionOptions;
    this.options = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, ...defined };
    if (this.options.renewDeadlineMs >= this.options.leaseDurationMs)
      throw new Error('leader election: the renew deadline must be shorter than the lease duration');
  }

  /** True while this process holds the lease and renewed it within the renew deadline. */
  isLeader(): boolean {
    return this.leading && Date.now() - this.lastRenew < this.options.renewDeadlineMs;
  }

  /**
   * Campaigns until `signal` aborts: waits for the lease, calls `lead` with a signal that aborts when leadership is
   * lost, and campaigns again after `lead` returns. Releases the lease on the way out.
   */
  async run(signal: AbortSignal, lead: (lost: AbortSignal) => Promise<void>): Promise<void> {
    const { retryPeriodMs, renewDeadlineMs, identity, log } = this.options;
    while (!signal.aborted) {
      // Acquire.
      while (!signal.aborted && !(await this.tryAcquireOrRenew())) await sleep(retryPeriodMs * (1 + Math.random() * 0.2), signal);
      if (signal.aborted) break;
      this.leading = true;
      log?.(`leader election: ${identity} is the leader`);
      const lost = new AbortController();
      const onStop = () => lost.abort();
      signal.addEventListener('abort', onStop, { once: true });
      const renewing = (async () => {
        while (!lost.signal.aborted) {
          await sleep(retryPeriodMs, lost.signal);
          if (lost.signal.aborted) break;
          if (await this.tryAcquireOrRenew()) continue;
          if (Date.now() - this.lastRenew >= renewDeadlineMs) {
            log?.(`leader election: ${identity} could not renew the lease within ${renewDeadlineMs} ms, stepping down`);
            this.leading = false;
            lost.abort();
          }
        }
      })();
      try {
        await lead(lost.signal);
      } finally {
        this.leading = false;
        lost.abort();
        signal.removeEventListener('abort', onStop);
        await renewing;
      }
    }
    await this.release();
  }

  /** Gives the lease up at once (graceful shutdown), so a standby replica need not wait for it to expire. */
  private async release(): Promise<void> {
    try {
      const lease = await this.client.get<Lease>(resources.lease, this.options.namespace, this.options.name);
      if (!lease || lease.spec?.holderIdentity !== this.options.identity) return;
      await this.client.replace({ ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() } });
    } catch (error) {
      this.options.log?.(`leader election: releasing the lease failed: ${(error as Error).message}`);
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.options;
    const now = new Date();
    const spec: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      const lease = await this.client.get<Lease>(resources.lease, namespace, name);
      if (!lease) {
        await this.client.create({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec });
        this.succeeded(spec, now.getTime());
        return true;
      }
      const current = lease.spec ?? {};
      const record = JSON.stringify(current);
      if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
      const holder = current.holderIdentity ?? '';
      const heldByOther = holder !== '' && holder !== identity;
      const duration = (current.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
      if (heldByOther && this.observed.at + duration > Date.now()) return false;
      const next: LeaseSpec =
        holder === identity
          ? { ...current, renewTime: spec.renewTime, leaseDurationSeconds: spec.leaseDurationSeconds }
          : { ...spec, leaseTransitions: (current.leaseTransitions ?? 0) + (holder === '' && !current.acquireTime ? 0 : 1) };
      await this.client.replace({ ...lease, spec: next });
      this.succeeded(next, now.getTime());
      return true;
    } catch (error) {
      if (!isConflict(error) && !isNotFound(error)) this.options.log?.(`leader election: ${(error as Error).message}`);
      return false;
    }
  }

  /** Counts from before the request was sent: the conservative end of when the renewal took effect. */
  private succeeded(spec: LeaseSpec, sentAt: number): void {
    this.lastRenew = sentAt;
    this.observed = { record: JSON.stringify(spec), at: sentAt };
  }
}
