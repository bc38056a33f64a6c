// The certificate the HTTPS listener serves, and where it came from. Precedence: files named in server.tls
// (the operator of the machine chose them), else a certificate uploaded through setup (kept in PostgreSQL, so
// every replica serves it), else a self-signed one kept in state_dir. An upload takes effect on the running
// listener (tls.Server.setSecureContext: new handshakes get it, open connections keep theirs); other replicas
// pick it up on their next poll.
import type { Server as TlsServer } from 'node:tls';
import { checkCertificatePair, serverTls, type CertificateInfo, type ServerConfig } from '@boxyard/kit';
import type { DatabasePool } from 'slonik';
import { loadUploadedCertificate } from './certificate-store.ts';

export type CertificateSource = 'configured' | 'uploaded' | 'self-signed';
const POLL_MS = 30_000;

export interface LiveTls {
  /** The PEM pair to start the HTTPS listener with. */
  readonly initial: { cert: string; key: string };
  source(): CertificateSource;
  info(): CertificateInfo;
  /** Whether the unencrypted listener should send clients to HTTPS: a real certificate is in place. */
  isConfigured(): boolean;
  attach(server: TlsServer): void;
  /** Serves this pair from now on (already checked, already stored). */
  use(pair: { cert: string; key: string }, source: CertificateSource): void;
  /** Reads the stored upload and switches to it when it changed (another replica took it). */
  refresh(): Promise<void>;
  start(): void;
  stop(): void;
}

export async function createLiveTls(options: {
  server: ServerConfig;
  stateDir: string | undefined;
  pool: DatabasePool;
  log: { warn(obj: object, msg: string): void };
  /** session.secret and previous_secrets: what opens the stored key. */
  secrets: readonly string[];
}): Promise<LiveTls> {
  const configuredFiles = Boolean(options.server.tls.cert || options.server.tls.key);
  let current: { cert: string; key: string };
  let source: CertificateSource;
  let info: CertificateInfo;
  let uploadedFingerprint: string | undefined;
  const uploaded = configuredFiles ? null : await loadUploadedCertificate(options.pool, options.secrets);
  if (uploaded && usable(uploaded.cert_pem, uploaded.key_pem)) {
    current = { cert: uploaded.cert_pem, key: uploaded.key_pem };
    source = 'uploaded';
    uploadedFingerprint = uploaded.fingerprint_sha256;
  } else {
    if (uploaded)
      options.log.warn(
        { fingerprint: uploaded.fingerprint_sha256 },
        'the uploaded certificate can no longer be served (expired, or its key sealed with a session secret no longer configured); using the self-signed one until a new one is uploaded',
      );
    const material = (await serverTls({ ...options.server, tls: { ...options.server.tls, enabled: true } }, options.stateDir))!;
    if (material.selfSigned && !material.persisted)
      options.log.warn({}, 'no state_dir: the self-signed certificate is new on every start; set state_dir to keep it');
    current = { cert: material.cert, key: material.key };
    source = material.selfSigned ? 'self-signed' : 'configured';
  }
  info = checkCertificatePair(current.cert, current.key);
  let server: TlsServer | undefined;
  let timer: NodeJS.Timeout | undefined;

  function usable(cert: string, key: string): boolean {
    try {
      checkCertificatePair(cert, key);
      return true;
    } catch {
      return false;
    }
  }

  const live: LiveTls = {
    initial: current,
    source: () => source,
    info: () => info,
    isConfigured: () => source !== 'self-signed',
    attach(tlsServer) {
      server = tlsServer;
    },
    use(pair, newSource) {
      const checked = checkCertificatePair(pair.cert, pair.key);
      server?.setSecureContext({ cert: pair.cert, key: pair.key });
      current = pair;
      source = newSource;
      info = checked;
      if (newSource === 'uploaded') uploadedFingerprint = checked.fingerprint256;
    },
    async refresh() {
      if (configuredFiles) return;
      const stored = await loadUploadedCertificate(options.pool, options.secrets);
      if (!stored || stored.fingerprint_sha256 === uploadedFingerprint) return;
      if (!usable(stored.cert_pem, stored.key_pem)) return;
      live.use({ cert: stored.cert_pem, key: stored.key_pem }, 'uploaded');
    },
    start() {
      if (configuredFiles) return;
      timer = setInterval(
        () => void live.refresh().catch((error: unknown) => options.log.warn({ err: error }, 'could not check for an uploaded certificate')),
        POLL_MS,
      );
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
  };
  return live;
}
