// Who may read /metrics: what controller-runtime's WithAuthenticationAndAuthorization filter does. The bearer token
// goes to the apiserver in a TokenReview; the user it names must be allowed `get` on the non-resource URL /metrics
// (SubjectAccessReview), which a ClusterRole grants (the chart's `<release>-metrics-reader`). Answers are cached for
// a minute per token, so a scrape every 30 s costs the apiserver two requests a minute per scraper.
import { createHash } from 'node:crypto';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';

export interface AuthDecision {
  status: 200 | 401 | 403;
  message: string;
}

interface TokenReview {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }; error?: string };
}
interface SubjectAccessReview {
  status?: { allowed?: boolean; reason?: string };
}

const CACHE_MS = 60_000;
const CACHE_ENTRIES = 256;

/** A function deciding whether the `Authorization` header may read `path`. */
export function kubernetesMetricsAuth(
  client: KubeClient,
  now: () => number = Date.now,
): (authorization: string | undefined, path: string) => Promise<AuthDecision> {
  const cache = new Map<string, { decision: AuthDecision; until: number }>();
  const review = async (token: string, path: string): Promise<AuthDecision> => {
    const tr = await client.request<TokenReview>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      verb: 'create',
      resource: 'tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const user = tr.status?.user;
    if (!tr.status?.authenticated || !user?.username) return { status: 401, message: 'the bearer token is not valid' };
    const sar = await client.request<SubjectAccessReview>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      verb: 'create',
      resource: 'subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb: 'get' } },
      },
    });
    return sar.status?.allowed
      ? { status: 200, message: 'ok' }
      : { status: 403, message: `${user.username} may not get ${path}: bind it to the ClusterRole that grants get on the non-resource URL ${path}` };
  };
  return async (authorization, path) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match) return { status: 401, message: `${path} needs a bearer token (a ServiceAccount token of a scraper allowed to get ${path})` };
    const key = createHash('sha256').update(`${path}\0${match[1]}`).digest('hex');
    const cached = cache.get(key);
    if (cached && cached.until > now()) return cached.decision;
    const decision = await review(match[1]!, path);
    if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(key, { decision, until: now() + CACHE_MS });
    return decision;
  };
}
