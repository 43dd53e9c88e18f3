import { RuntimeError } from '../errors.js';
import { domainControllerAddress, fileServerAddress } from './domain-addresses.js';
import type { NodeFile } from './node-file.js';

/**
 * Cross-field rules of the node file's file servers that a JSON Schema cannot express: server
 * names unique in their domain, share names unique on their server, and no address given in the
 * file that another simulated host (a domain controller or file server of any domain) has. The
 * first problem is reported as `<source>: <field path>: <reason>`.
 */
export function checkFileServers(file: NodeFile, source: string): void {
  const error = (path: string, reason: string): RuntimeError => new RuntimeError('InvalidArgument', `${source}: ${path}: ${reason}`);
  const hosts = new Map<string, { path: string; given: boolean }>();
  // Derived addresses are distinct by construction; a given one may clash with any other.
  const claim = (address: string, path: string, given: boolean): void => {
    const holder = hosts.get(address);
    if (holder !== undefined && (given || holder.given)) throw error(`${given ? path : holder.path}.address`, `${address} is already the address of ${given ? holder.path : path}`);
    hosts.set(address, { path, given });
  };
  file.domains.forEach((domain, i) => {
    domain.domainControllers.forEach((dc, j) => claim(domainControllerAddress(domain, j), `domains[${i}].domainControllers[${j}]`, dc.address !== undefined));
  });
  file.domains.forEach((domain, i) => {
    const names = new Map<string, number>();
    (domain.fileServers ?? []).forEach((server, j) => {
      const path = `domains[${i}].fileServers[${j}]`;
      const key = server.name.toLowerCase();
      if (names.has(key)) throw error(`${path}.name`, `"${server.name}" is already defined by domains[${i}].fileServers[${names.get(key)}]`);
      names.set(key, j);
      claim(fileServerAddress(domain, j), path, server.address !== undefined);
      const shares = new Map<string, number>();
      server.shares.forEach((share, k) => {
        const shareKey = share.name.toLowerCase();
        if (shares.has(shareKey)) throw error(`${path}.shares[${k}].name`, `"${share.name}" is already defined by ${path}.shares[${shares.get(shareKey)}]`);
        shares.set(shareKey, k);
      });
    });
  });
}
