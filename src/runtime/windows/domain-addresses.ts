import type { DomainSpec } from './node-file.js';

/**
 * Where the simulated hosts of a domain are: loopback addresses only, the node file's when it names
 * one, else derived from the domain's DNS name, so the same domain gets the same addresses in
 * every run (nslookup answers them; UNC paths may name a file server by its address).
 */

/** FNV-1a of the lower-cased name: the same domain gets the same addresses in every run. */
function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (const ch of name.toLowerCase()) {
    h ^= ch.codePointAt(0)!;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The loopback address of a domain's host (its DCs from .1, its file servers from .101): the
 * node file's, else 127.<64-191>.<0-255>.<n> from a hash of the domain's DNS name (15 bits, so
 * two domains of one file practically never share a /24; above the default pod CIDR
 * 127.10.0.0/16). Never beyond 127.0.0.0/8.
 */
function derivedAddress(domain: DomainSpec, host: number): string {
  const h = nameHash(domain.dnsName);
  return `127.${64 + (h % 128)}.${(h >>> 7) % 256}.${host}`;
}

export function domainControllerAddress(domain: DomainSpec, index: number): string {
  return domain.domainControllers[index]?.address ?? derivedAddress(domain, index + 1);
}

export function fileServerAddress(domain: DomainSpec, index: number): string {
  return domain.fileServers?.[index]?.address ?? derivedAddress(domain, index + 101);
}
