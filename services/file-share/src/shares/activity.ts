// What links do, for their owners and for operators: events in GET /events (rows in the events table, in order with
// the tree's changes, filtered by path like every event: a reader of the shared folder sees its links' activity;
// the token never appears, only the link's id) and Prometheus counters on /metrics (labels: kind and action only).
import type { FastifyBaseLogger } from 'fastify';
import { Counter, type Registry } from '@prometheus-io/client';
import type { Tree } from '../tree/tree-store.ts';
import type { LinkWithCreator } from './share-store.ts';

export type Refusal = 'unknown' | 'revoked' | 'expired' | 'exhausted' | 'creator-lost' | 'wrong-password' | 'throttled' | 'not-allowed';

export function createActivity(tree: Tree, registry: Registry, log: FastifyBaseLogger) {
  const actions = new Counter({
    name: 'boxyard_file_share_link_actions_total',
    help: 'Share link and file request activity: created, used (a download or zip of a share link), revoked, upload (a file arrived through a request).',
    labelNames: ['kind', 'action'] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'boxyard_file_share_link_refusals_total',
    help: 'Requests through a link that were refused, by reason (unknown, revoked, expired, exhausted, creator-lost, wrong-password, throttled, not-allowed).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const uploadedBytes = new Counter({
    name: 'boxyard_file_share_request_upload_bytes_total',
    help: 'Bytes of the files that arrived through file requests.',
    registers: [registry],
  });
  // An event that cannot be written is logged; the use it reports has happened and is not undone.
  const record = (name: Parameters<Tree['recordEvent']>[0], paths: string[], data: Record<string, unknown>) =>
    tree.recordEvent(name, paths, data).catch((error: unknown) => log.warn({ err: error, event: name }, 'could not record a share link event'));
  const base = (link: LinkWithCreator) => ({ shareId: link.id, kind: link.kind, path: link.path });
  return {
    created: async (link: LinkWithCreator) => {
      actions.inc({ kind: link.kind, action: 'created' });
      await record('share-created', [link.path], { ...base(link), expiresAt: new Date(link.expires_at).toISOString() });
    },
    used: async (link: LinkWithCreator, use: 'download' | 'zip') => {
      actions.inc({ kind: link.kind, action: 'used' });
      await record('share-used', [link.path], { ...base(link), use });
    },
    revoked: async (link: LinkWithCreator) => {
      actions.inc({ kind: link.kind, action: 'revoked' });
      await record('share-revoked', [link.path], base(link));
    },
    arrived: async (link: LinkWithCreator, file: { path: string; size: number; sha256: string }) => {
      actions.inc({ kind: link.kind, action: 'upload' });
      uploadedBytes.inc(file.size);
      await record('request-upload', [file.path], { shareId: link.id, filePath: file.path, size: file.size, checksum: file.sha256 });
    },
    refused: (reason: Refusal) => refusals.inc({ reason }),
  };
}

export type Activity = ReturnType<typeof createActivity>;
