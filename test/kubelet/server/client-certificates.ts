// A certificate authority and client certificates for the kubelet server's tests (made with the
// library the server makes its own serving certificate with).
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface TestCa {
  readonly certPem: string;
  issue(commonName: string, organizations?: readonly string[], usage?: 'client' | 'server'): Promise<{ cert: string; key: string }>;
}

function pkcs8Pem(der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----\n`;
}

export async function createTestCa(name: string): Promise<TestCa> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 24 * 3600_000);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01', name: `CN=${name}`, notBefore, notAfter, keys, signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.digitalSignature, true)],
  }, webcrypto);
  let serial = 1;
  return {
    certPem: ca.toString('pem'),
    async issue(commonName, organizations = [], usage = 'client') {
      const leafKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
      const subject = [`CN=${commonName}`, ...organizations.map((o) => `O=${o}`)].join(', ');
      serial += 1;
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: serial.toString(16).padStart(2, '0'), subject, issuer: ca.subject, notBefore, notAfter,
        publicKey: leafKeys.publicKey, signingKey: keys.privateKey, signingAlgorithm: ALG,
        extensions: [new x509.ExtendedKeyUsageExtension([usage === 'client' ? x509.ExtendedKeyUsage.clientAuth : x509.ExtendedKeyUsage.serverAuth])],
      }, webcrypto);
      return { cert: cert.toString('pem'), key: pkcs8Pem(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey)) };
    },
  };
}
