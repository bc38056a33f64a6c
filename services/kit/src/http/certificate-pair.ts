// Checks that a PEM certificate (chain) and private key belong together and can serve TLS now, with a reason a
// person can act on when they do not. Used for configured files, uploaded pairs and the cached self-signed one.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';

export interface CertificateInfo {
  subject: string;
  issuer: string;
  validFrom: Date;
  validTo: Date;
  /** SHA-256 fingerprint of the leaf certificate, colon-separated hex (as openssl and browsers show it). */
  fingerprint256: string;
  selfSigned: boolean;
  /** DNS names and IP addresses the certificate is for. */
  subjectAltName: string | undefined;
}

export class CertificatePairError extends Error {
  /** Which half is wrong: the certificate, the key, or the two together. */
  readonly part: 'cert' | 'key' | 'pair';
  constructor(message: string, part: 'cert' | 'key' | 'pair') {
    super(message);
    this.part = part;
  }
}

const PEM_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Throws CertificatePairError unless `cert` (leaf first, chain after) and `key` make a usable pair. */
export function checkCertificatePair(cert: string, key: string, now = new Date()): CertificateInfo {
  const blocks = cert.match(PEM_BLOCK);
  if (!blocks) throw new CertificatePairError('not a PEM certificate (expected -----BEGIN CERTIFICATE-----)', 'cert');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(blocks[0]);
  } catch {
    throw new CertificatePairError('the certificate could not be read (damaged PEM)', 'cert');
  }
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new CertificatePairError('not a readable PEM private key (an encrypted key must be decrypted first)', 'key');
  }
  if (privateKey.type !== 'private') throw new CertificatePairError('not a private key', 'key');
  if (!leaf.checkPrivateKey(privateKey)) throw new CertificatePairError('the private key does not belong to the certificate', 'pair');
  const validFrom = new Date(leaf.validFrom);
  const validTo = new Date(leaf.validTo);
  if (validTo <= now) throw new CertificatePairError(`the certificate expired on ${validTo.toISOString()}`, 'cert');
  if (validFrom > now) throw new CertificatePairError(`the certificate is not valid before ${validFrom.toISOString()}`, 'cert');
  try {
    // What the listener will do with it: catches what the checks above do not (unsupported key types).
    createSecureContext({ cert, key });
  } catch (error) {
    throw new CertificatePairError(`the pair cannot serve TLS: ${(error as Error).message}`, 'pair');
  }
  return {
    subject: leaf.subject.replace(/\n/g, ', '),
    issuer: leaf.issuer.replace(/\n/g, ', '),
    validFrom,
    validTo,
    fingerprint256: leaf.fingerprint256,
    selfSigned: leaf.subject === leaf.issuer && leaf.checkIssued(leaf),
    subjectAltName: leaf.subjectAltName,
  };
}
