/**
 * The kubelet's serving certificate. Without --tls-cert-file/--tls-private-key-file the kubelet
 * makes its own (cmd/kubelet/app/server.go InitializeTLS → client-go util/cert
 * GenerateSelfSignedCertKeyWithFixtures, v1.34): a CA `<host>-ca@<unix time>` and a serving
 * certificate `<host>@<unix time>` signed by it, valid one year, served with the CA as its chain.
 * Upstream uses RSA 2048; this one uses ECDSA P-256 (our choice: one process may run a thousand
 * nodes, and an RSA key costs a hundred times more to make). Clients see the same shape.
 */
// @peculiar/x509 resolves its ASN.1 serializers through tsyringe, which needs the Reflect
// metadata API; the polyfill only adds functions to Reflect and holds no state of ours.
import 'reflect-metadata';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

export interface ServingCertificate {
  /** PEM: the serving certificate first, then its issuer (when self-signed). */
  readonly cert: string;
  /** PEM (PKCS #8). */
  readonly key: string;
}

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;

function serial(): string {
  // Positive (high bit clear) 16-byte serial.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f;
  return Buffer.from(bytes).toString('hex');
}

function pkcs8Pem(der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----\n`;
}

/** Subject alternative names for the hosts: IP addresses as IP SANs, the rest as DNS names. */
function altNames(hosts: readonly string[]): x509.JsonGeneralName[] {
  const seen = new Set<string>();
  const names: x509.JsonGeneralName[] = [];
  for (const host of hosts) {
    if (host === '' || seen.has(host)) continue;
    seen.add(host);
    names.push({ type: isIP(host) ? 'ip' : 'dns', value: host });
  }
  return names;
}

/**
 * A CA and a serving certificate for `host` (the node name) and `alternates` (addresses and
 * names), as GenerateSelfSignedCertKeyWithFixtures makes them.
 */
export async function selfSignedServingCertificate(host: string, alternates: readonly string[] = [], now = new Date()): Promise<ServingCertificate> {
  const unix = Math.floor(now.getTime() / 1000);
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now.getTime() + ONE_YEAR_MS);
  const caKeys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${host}-ca@${unix}`,
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyCertSign, true),
    ],
  }, webcrypto);
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const serving = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${host}@${unix}`,
    issuer: ca.subject,
    notBefore,
    notAfter,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: KEY_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyEncipherment | x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(altNames([host, ...alternates])),
    ],
  }, webcrypto);
  const key = pkcs8Pem(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { cert: `${serving.toString('pem')}\n${ca.toString('pem')}\n`, key };
}

/** Reads a PEM file the user named, with an error that names the flag and the file. */
export async function readPemFile(flag: string, file: string, kind: 'certificate' | 'private key'): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`${flag}: cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  const begin = kind === 'certificate' ? /-----BEGIN CERTIFICATE-----/ : /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;
  if (!begin.test(text)) throw new Error(`${flag}: ${file} holds no PEM ${kind}`);
  return text;
}
