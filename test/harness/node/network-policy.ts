// NetworkPolicy enforcement for the real node, with iptables. No upstream enforcer can run here: kube-router,
// Antrea, Weave and Romana are refused by the Go module proxy these machines use, kube-network-policies queues
// packets through nftables `queue` (CONFIG_NFT_QUEUE is off in this kernel), Calico and Cilium need their own
// datastores and eBPF toolchains. So the harness enforces the API itself, like kube-router's firewall does: it
// lists policies, pods and namespaces every second and programs one chain per isolated pod in the FORWARD path
// (bridged pod-to-pod traffic passes iptables through br_netfilter). Implemented: policyTypes Ingress and Egress,
// podSelector / namespaceSelector (matchLabels, matchExpressions), ipBlock with except, ports by number, range
// (endPort) or name, TCP/UDP/SCTP. Traffic from the node itself (probes) is never filtered, as the API requires.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import type { Namespace, Pod } from 'kubernetes-types/core/v1.d.ts';
import type { LabelSelector } from 'kubernetes-types/meta/v1.d.ts';
import type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort } from 'kubernetes-types/networking/v1.d.ts';
import { KubeClient } from '@boxyard/kit/kube/client.ts';
import { kubeconfigCredentials } from '@boxyard/kit/kube/credentials.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { KubeObject } from '@boxyard/kit/kube/types.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);
export const NETPOL_CHAIN = 'BOXYARD-NETPOL';
const POD_CHAIN_PREFIX = 'BOXYARD-NP-';

type Labels = Record<string, string>;

export function matches(selector: LabelSelector | undefined, labels: Labels = {}): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels;
    if (operator === 'In' && !(has && values.includes(labels[key]!))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key]!)) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

interface PodInfo {
  namespace: string;
  labels: Labels;
  ip: string;
  ports: Map<string, { port: number; protocol: string }>;
}

function podInfo(pod: Pod): PodInfo | undefined {
  const ip = pod.status?.podIP;
  if (!ip || ip.includes(':') || pod.spec?.hostNetwork || ['Succeeded', 'Failed'].includes(pod.status?.phase ?? '')) return undefined;
  const ports = new Map<string, { port: number; protocol: string }>();
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? []) if (p.name) ports.set(p.name, { port: p.containerPort, protocol: p.protocol ?? 'TCP' });
  return { namespace: pod.metadata?.namespace ?? 'default', labels: pod.metadata?.labels ?? {}, ip, ports };
}

/** iptables match fragments for the peers of one rule: source (ingress) or destination (egress) addresses. */
function peerMatches(
  peers: NetworkPolicyPeer[] | undefined,
  policyNamespace: string,
  pods: PodInfo[],
  namespaces: Map<string, Labels>,
  flag: '-s' | '-d',
): string[][] {
  if (!peers || peers.length === 0) return [[]]; // every peer
  const out: string[][] = [];
  for (const peer of peers) {
    if (peer.ipBlock) {
      if (peer.ipBlock.cidr.includes(':')) continue; // IPv6: this node's pods have IPv4 only (and iptables is v4)
      // except first: a RETURN for the excluded ranges would skip the rest of the chain, so negate them inline.
      const excepts = peer.ipBlock.except ?? [];
      out.push([flag, peer.ipBlock.cidr, ...excepts.flatMap((cidr) => ['-m', 'set', '!', '--match-set', exceptSet(cidr), flag === '-s' ? 'src' : 'dst'])]);
      continue;
    }
    for (const pod of pods) {
      const inNamespace = peer.namespaceSelector ? matches(peer.namespaceSelector, namespaces.get(pod.namespace)) : pod.namespace === policyNamespace;
      if (inNamespace && matches(peer.podSelector, pod.labels)) out.push([flag, `${pod.ip}/32`]);
    }
  }
  return out;
}

const exceptSet = (cidr: string) => `boxyard-np-${createHash('sha256').update(cidr).digest('hex').slice(0, 12)}`;

/** iptables match fragments for the ports of one rule, resolved against `target` for named ports. */
function portMatches(ports: NetworkPolicyPort[] | undefined, target: PodInfo | undefined): string[][] {
  if (!ports || ports.length === 0) return [[]];
  const out: string[][] = [];
  for (const p of ports) {
    const protocol = (p.protocol ?? 'TCP').toLowerCase();
    if (p.port === undefined) out.push(['-p', protocol]);
    else if (typeof p.port === 'number') out.push(['-p', protocol, '--dport', p.endPort ? `${p.port}:${p.endPort}` : String(p.port)]);
    else {
      const named = target?.ports.get(p.port);
      if (named) out.push(['-p', named.protocol.toLowerCase(), '--dport', String(named.port)]);
    }
  }
  return out;
}

const hasType = (policy: NetworkPolicy, type: 'Ingress' | 'Egress') =>
  policy.spec?.policyTypes ? policy.spec.policyTypes.includes(type) : type === 'Ingress' || (policy.spec?.egress?.length ?? 0) > 0;

/** The iptables-restore input for the filter table, and the ipsets the `except` ranges need. */
export function renderRules(policies: NetworkPolicy[], pods: PodInfo[], namespaces: Map<string, Labels>): { rules: string; chains: string[]; sets: string[] } {
  const lines: string[] = [];
  const chains: string[] = [NETPOL_CHAIN];
  const sets = new Set<string>();
  const main: string[] = [`-A ${NETPOL_CHAIN} -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN`];
  for (const pod of pods) {
    const selecting = policies.filter((p) => (p.metadata?.namespace ?? 'default') === pod.namespace && matches(p.spec?.podSelector, pod.labels));
    for (const direction of ['Ingress', 'Egress'] as const) {
      const applicable = selecting.filter((p) => hasType(p, direction));
      if (applicable.length === 0) continue; // not isolated in this direction
      const chain = `${POD_CHAIN_PREFIX}${direction === 'Ingress' ? 'IN' : 'OUT'}-${createHash('sha256').update(pod.ip).digest('hex').slice(0, 10).toUpperCase()}`;
      chains.push(chain);
      main.push(`-A ${NETPOL_CHAIN} ${direction === 'Ingress' ? '-d' : '-s'} ${pod.ip}/32 -j ${chain}`);
      for (const policy of applicable) {
        const rules = direction === 'Ingress' ? (policy.spec?.ingress ?? []) : (policy.spec?.egress ?? []);
        for (const rule of rules) {
          const peers = direction === 'Ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to;
          for (const peer of peers ?? []) for (const cidr of peer.ipBlock?.except ?? []) if (!cidr.includes(':')) sets.add(cidr);
          const peerSets = peerMatches(peers, pod.namespace, pods, namespaces, direction === 'Ingress' ? '-s' : '-d');
          // A named port of an egress rule belongs to the destination pod: resolve it per destination.
          const portSets = direction === 'Ingress' ? portMatches(rule.ports, pod) : portMatches(rule.ports, undefined);
          for (const peerMatch of peerSets)
            for (const portMatch of portSets) lines.push(`-A ${chain} ${[...peerMatch, ...portMatch].join(' ')} -j RETURN`.replace(/ {2,}/g, ' '));
        }
      }
      lines.push(`-A ${chain} -j DROP`);
    }
  }
  const rules = ['*filter', ...chains.map((c) => `:${c} - [0:0]`), ...main, ...lines, 'COMMIT', ''].join('\n');
  return { rules, chains, sets: [...sets] };
}

export interface NetworkPolicyEnforcer {
  stop(): Promise<void>;
  /** Resolves after the next complete sync (tests wait for a policy to be in force). */
  synced(): Promise<void>;
}

export function startNetworkPolicyEnforcer(kubeconfig: string, log: (line: string) => void): NetworkPolicyEnforcer {
  const client = new KubeClient(kubeconfigCredentials(kubeconfig), { fieldManager: 'boxyard-test', userAgent: 'boxyard-netpol' });
  let stopped = false;
  let applied = '';
  let appliedChains: string[] = [];
  const waiters: (() => void)[] = [];
  let lastError = '';

  const sync = async () => {
    const [policies, podList, namespaceList] = await Promise.all([
      client.list<KubeObject & NetworkPolicy>(resources.networkPolicy, undefined),
      client.list<KubeObject & Pod>(resources.pod, undefined),
      client.list<KubeObject & Namespace>(resources.namespace, undefined),
    ]);
    const namespaces = new Map(namespaceList.items.map((n) => [n.metadata.name, n.metadata.labels ?? {}]));
    const pods = podList.items.map(podInfo).filter((p): p is PodInfo => p !== undefined);
    const { rules, chains, sets } = renderRules(policies.items, pods, namespaces);
    if (rules === applied) return;
    for (const cidr of sets) {
      await run('ipset', ['-exist', 'create', exceptSet(cidr), 'hash:net']);
      await run('ipset', ['-exist', 'add', exceptSet(cidr), cidr]);
    }
    await new Promise<void>((resolve, reject) => {
      const child = execFile('iptables-restore', ['--noflush'], (error) => (error ? reject(error) : resolve()));
      child.stdin?.end(rules);
    });
    const jump = ['FORWARD', '-j', NETPOL_CHAIN];
    await run('iptables', ['-C', ...jump]).catch(() => run('iptables', ['-I', ...jump.slice(0, 1), '1', ...jump.slice(1)]));
    for (const stale of appliedChains.filter((c) => !chains.includes(c))) {
      await run('iptables', ['-F', stale]).catch(ignoreError('a chain already gone'));
      await run('iptables', ['-X', stale]).catch(ignoreError('a chain already gone'));
    }
    applied = rules;
    appliedChains = chains;
  };

  const loop = (async () => {
    while (!stopped) {
      try {
        await sync();
        lastError = '';
      } catch (error) {
        const message = (error as Error).message;
        if (message !== lastError) log(`network policy sync failed: ${message}`);
        lastError = message;
      }
      for (const wake of waiters.splice(0)) wake();
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();

  return {
    async stop() {
      stopped = true;
      await loop;
      client.close();
    },
    synced: () => new Promise((resolve) => waiters.push(resolve)),
  };
}
