// Resumable (tus 1.0) uploads through a file request, at `/-/tus/<token>`: the same protocol and code as
// /api/uploads (resumable/tus-routes.ts), mounted outside the share's credential check with the link deciding:
//   POST   /-/tus/<token>         creates an upload; Upload-Metadata `filename` (or `name`) is the file's name in
//                                the request's folder; takes one use of the link (given back if the upload ends
//                                without a file: terminated or expired)
//   HEAD/PATCH/DELETE /-/tus/<token>/<id>   as on /api/uploads; the upload belongs to the link (`link:<id>`)
// Every request reads the link again: revoked, expired or its creator's permission gone → 410 (a PATCH streaming at
// that moment is stopped within `recheckIntervalMs`); its password as Basic with any user name; its size limit at
// creation and at every chunk. A link used up by other uploads still lets an upload that took its use finish. The
// visitor never sees the folder: answers carry offsets and the file's own checksum, refusals name no path.
import { documentStatuses, HttpError, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { joinPath, validateName } from '../paths/share-path.ts';
import { resumableRoutes, type ResumableOptions, type UploadMount } from '../resumable/tus-routes.ts';
import type { WriteAccess } from '../resumable/write-access.ts';
import type { Activity } from './activity.ts';
import { gone, linkPrincipal, linkState } from './link-access.ts';
import { LINK_REALM, passwordGate, type PasswordGate } from './link-password.ts';
import { asLinkError, requestWrite } from './request-upload.ts';
import { TOKEN_PATTERN, type LinkWithCreator, type ShareStore } from './share-store.ts';

export const TUS_LINK_PREFIX = '/-/tus/';

export interface RequestTusDeps {
  shares: ShareStore;
  activity: Activity;
  gate: PasswordGate;
  maxUploadBytes: number;
}

interface Visit {
  link: LinkWithCreator;
  /** This request continues an upload that took its use (or has just taken it). */
  holdsUse: boolean;
}

/** The link as it is now, for what this request does: 404 unknown, 410 no longer usable, 403 not a file request. */
async function usableLink(deps: RequestTusDeps, token: string, holdsUse: boolean): Promise<LinkWithCreator> {
  const link = TOKEN_PATTERN.test(token) ? await deps.shares.byToken(token) : null;
  if (!link) {
    deps.activity.refused('unknown');
    throw notFound('No such link');
  }
  const state = linkState(link, Date.now(), holdsUse);
  if (state !== 'active') {
    deps.activity.refused(state);
    throw gone(state);
  }
  if (link.kind !== 'request' || link.entry_kind !== 'dir') {
    deps.activity.refused('not-allowed');
    throw new HttpError(403, 'This link does not accept uploads');
  }
  return link;
}

/** The upload's owner continues it; through a link, whoever holds the link (and the upload's unguessable id). */
const ownerOf = (link: LinkWithCreator) => `link:${link.id}`;

/** Who may write where through the link: only a new name in its own folder, within its size limit. */
function linkWriteAccess(deps: RequestTusDeps, visit: Visit): WriteAccess {
  return (path) => {
    const { link } = visit;
    const slash = path.lastIndexOf('/');
    if ((slash === 0 ? '/' : path.slice(0, slash)) !== link.path) throw new HttpError(403, 'A file request accepts files into its own folder only');
    const write = requestWrite(link, path.slice(slash + 1), deps.maxUploadBytes, visit.holdsUse);
    return { owner: ownerOf(link), userId: null, mayReplace: false, maxBytes: write.maxBytes };
  };
}

/** Registers the tus routes for file requests; `options` are those of /api/uploads. */
export async function requestTusRoutes(app: FastifyInstance, options: Omit<ResumableOptions, 'writeAccess' | 'mount'> & RequestTusDeps): Promise<void> {
  const visits = new WeakMap<FastifyRequest, Visit>();
  const visitOf = (request: FastifyRequest): Visit => {
    const visit = visits.get(request);
    if (!visit) throw new Error('file request tus: no link for this request'); // the onRequest hook sets it
    return visit;
  };

  // What the link itself may answer on every route: its password (401), not a file request (403), unknown (404), gone (410).
  documentStatuses(app, 'envelope', [401, 403, 404, 410]);
  app.addHook('onRequest', async (request) => {
    if (request.method === 'OPTIONS') return;
    const { token, id } = request.params as { token?: string; id?: string };
    // Creating takes a use; every later request belongs to an upload that has taken one.
    const holdsUse = id !== undefined;
    const link = await usableLink(options, token ?? '', holdsUse);
    const outcome = await passwordGate(options.gate, link, request, () => options.activity.refused('wrong-password'));
    if (outcome === 'missing')
      throw new HttpError(401, 'This link needs its password (HTTP Basic, any user name)', { headers: { 'www-authenticate': LINK_REALM } });
    request.principal = linkPrincipal(link);
    visits.set(request, { link, holdsUse });
  });

  const mount: UploadMount = {
    endpoint: `${TUS_LINK_PREFIX}:token`,
    base: (request) => `${TUS_LINK_PREFIX}${visitOf(request).link.token}`,
    owner: (request) => ownerOf(visitOf(request).link),
    destination(request, metadata) {
      if (metadata.path !== undefined || metadata.folder !== undefined)
        throw new HttpError(403, 'A file request accepts files into its own folder only: name the file with Upload-Metadata `filename`');
      const name = metadata.filename ?? metadata.name;
      if (name === undefined) throw new HttpError(400, 'Upload-Metadata names the file: `filename`');
      return joinPath(visitOf(request).link.path, validateName(name, '/Upload-Metadata/filename'));
    },
    async reserve(request) {
      const visit = visitOf(request);
      // One conditional UPDATE: two replicas can never both take the link's last use.
      if (!(await options.shares.takeUse(visit.link.id))) {
        options.activity.refused('exhausted');
        throw gone('exhausted');
      }
      visit.holdsUse = true;
    },
    async unreserve(request) {
      const visit = visitOf(request);
      await options.shares.returnUse(visit.link.id);
      visit.holdsUse = false;
    },
    reservation: (request) => visitOf(request).link.id,
    async recheck(request) {
      const visit = visitOf(request);
      visit.link = await usableLink(options, visit.link.token, true);
    },
    async landed(request, row, sha256) {
      const { link } = visitOf(request);
      await options.shares.recordArrival(link.id, { path: row.path, size: row.length, sha256, address: request.ip });
      await options.activity.arrived(link, { path: row.path, size: row.length, sha256 });
    },
    refine: (request, error) => {
      const visit = visits.get(request);
      return visit ? asLinkError(error, visit.link) : error;
    },
  };
  await app.register(resumableRoutes, { ...options, writeAccess: (request) => linkWriteAccess(options, visitOf(request)), mount });
}
