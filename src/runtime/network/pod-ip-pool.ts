import { RuntimeError } from '../errors.js';

/** Default pod range: loopback addresses, which every Linux machine routes to `lo`. */
export const DEFAULT_POD_CIDR = '127.10.0.0/16';

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

export interface Ipv4Cidr {
  /** The network address as an unsigned 32-bit number. */
  readonly base: number;
  readonly bits: number;
  readonly text: string;
}

/** Parses `a.b.c.d/n` (n ≤ 30: a range needs room for hosts); undefined when it is not one. */
export function parseIpv4Cidr(text: string): Ipv4Cidr | undefined {
  const m = CIDR.exec(text.trim());
  if (m === null) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const bits = Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 30 || bits < 8) return undefined;
  const address = octets.reduce((acc, o) => acc * 256 + o, 0);
  const size = 2 ** (32 - bits);
  const base = Math.floor(address / size) * size;
  return { base, bits, text: `${formatIpv4(base)}/${bits}` };
}

export function formatIpv4(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
}

/** Whether the whole range lies in 127.0.0.0/8, the only addresses this simulator hands out. */
export function isLoopbackCidr(cidr: Ipv4Cidr): boolean {
  return cidr.base >>> 24 === 127 && cidr.bits >= 8;
}

/**
 * Checks a pod CIDR given to the runtime (`--pod-cidr`, `podCidr`): an IPv4 range inside
 * 127.0.0.0/8. Our own text: no upstream runtime restricts the range this way.
 */
export function loopbackPodCidr(text: string, field: string): Ipv4Cidr {
  const cidr = parseIpv4Cidr(text);
  if (cidr === undefined) throw new RuntimeError('InvalidArgument', `${field} "${text}" is not an IPv4 CIDR with a prefix length between 8 and 30`);
  if (!isLoopbackCidr(cidr)) {
    throw new RuntimeError('InvalidArgument', `${field} "${text}" is not a loopback range: pod IPs must lie in 127.0.0.0/8`);
  }
  return cidr;
}

/**
 * Pod IPs of one runtime: the lowest free host address of the range from .2 upwards (.1 is the
 * range's gateway, as in the CNI bridge plugin's host-local IPAM), each held until released.
 */
export class PodIpPool {
  private cidr: Ipv4Cidr;
  private readonly used = new Set<number>();
  /** Where the next search starts (host-local IPAM continues after the last address it gave). */
  private cursor = 2;

  constructor(cidr: Ipv4Cidr) {
    this.cidr = cidr;
  }

  get range(): string {
    return this.cidr.text;
  }

  /** Addresses in use (for tests and `crictl info`). */
  get allocated(): number {
    return this.used.size;
  }

  /**
   * Moves to another range: addresses already given stay valid, and stay taken, until released
   * (a range moved back to, or a sandbox a durable runtime reloaded, never hands one out twice).
   */
  setRange(cidr: Ipv4Cidr): void {
    if (cidr.text === this.cidr.text) return;
    this.cidr = cidr;
    this.cursor = 2;
  }

  /**
   * Marks an address given out before as taken (a READY sandbox reloaded from the metadata
   * store); false when it is not an IPv4 address or already taken.
   */
  reserve(ip: string): boolean {
    const n = ipv4Number(ip);
    if (n === undefined || this.used.has(n)) return false;
    this.used.add(n);
    return true;
  }

  allocate(): string {
    const size = 2 ** (32 - this.cidr.bits);
    // Hosts 2 … size-2: not the network address, not the gateway, not the broadcast address.
    const hosts = size - 3;
    for (let i = 0; i < hosts; i++) {
      const host = 2 + ((this.cursor - 2 + i) % hosts);
      const ip = this.cidr.base + host;
      if (this.used.has(ip)) continue;
      this.used.add(ip);
      this.cursor = host + 1 > size - 2 ? 2 : host + 1;
      return formatIpv4(ip);
    }
    // The text of the host-local IPAM plugin when its range is exhausted.
    throw new RuntimeError('ResourceExhausted', `failed to allocate for range 0: no IP addresses available in range set: ${formatIpv4(this.cidr.base + 1)}-${formatIpv4(this.cidr.base + size - 2)}`);
  }

  release(ip: string): void {
    const n = ipv4Number(ip);
    if (n !== undefined) this.used.delete(n);
  }
}

function ipv4Number(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((acc, o) => acc * 256 + Number(o), 0);
}
