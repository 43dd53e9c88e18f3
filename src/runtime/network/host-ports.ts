import { connect, createServer, type Server, type Socket } from 'node:net';
import type { PortMapping__Output } from '../../generated/runtime/v1/PortMapping.js';
import { RuntimeError } from '../errors.js';

/** runtime.v1.Protocol */
const PROTOCOL_NAMES = ['TCP', 'UDP', 'SCTP'];

interface Binding {
  server: Server;
  sockets: Set<Socket>;
}

/** The address a mapping binds: its host IP, 127.0.0.1 when none (or the wildcard) is given. */
export function hostIpOf(mapping: PortMapping__Output): string {
  const ip = mapping.host_ip.trim();
  if (ip === '' || ip === '0.0.0.0') return '127.0.0.1';
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip) || ip.split('.').some((o) => Number(o) > 255)) {
    throw new RuntimeError('InvalidArgument', `port_mappings host_ip "${ip}" is not a loopback address: host ports bind on 127.0.0.0/8 only`);
  }
  return ip;
}

/**
 * Host ports of the node (the CNI portmap plugin's job): for each TCP mapping with a host port, a
 * listener on hostIP:hostPort that forwards every connection to podIP:containerPort, held from
 * RunPodSandbox to StopPodSandbox.
 */
export class HostPorts {
  private readonly bySandbox = new Map<string, Binding[]>();

  /** Binds every host port of the sandbox, or none: a port already taken fails with the portmap plugin's words. */
  async bind(sandbox: { id: string; name: string; ip: string }, mappings: readonly PortMapping__Output[], onSkip: (mapping: PortMapping__Output) => void): Promise<void> {
    const bound: Binding[] = [];
    try {
      for (const mapping of mappings) {
        if (mapping.host_port <= 0) continue;
        if (mapping.protocol !== 0) {
          onSkip(mapping);
          continue;
        }
        const hostIp = hostIpOf(mapping);
        bound.push(await listen(hostIp, mapping.host_port, sandbox.ip, mapping.container_port).catch((err: NodeJS.ErrnoException) => {
          const why = err.code === 'EADDRINUSE' ? 'bind: address already in use' : err.code === 'EACCES' ? 'bind: permission denied' : err.message;
          // containerd's wrapping of a CNI failure and the hostport text of the kubelet/portmap plugin.
          throw new RuntimeError(
            'Unknown',
            `failed to setup network for sandbox "${sandbox.id}": plugin type="portmap" failed (add): cannot open hostport ${mapping.host_port} for pod ${sandbox.name}: listen ${PROTOCOL_NAMES[mapping.protocol]?.toLowerCase() ?? 'tcp'}4 ${hostIp}:${mapping.host_port}: ${why}`,
          );
        }));
      }
    } catch (err) {
      for (const b of bound) close(b);
      throw err;
    }
    if (bound.length > 0) this.bySandbox.set(sandbox.id, bound);
  }

  release(sandboxId: string): void {
    const bound = this.bySandbox.get(sandboxId);
    this.bySandbox.delete(sandboxId);
    for (const b of bound ?? []) close(b);
  }

  count(): number {
    let n = 0;
    for (const b of this.bySandbox.values()) n += b.length;
    return n;
  }

  releaseAll(): void {
    for (const id of [...this.bySandbox.keys()]) this.release(id);
  }
}

function listen(hostIp: string, hostPort: number, podIp: string, containerPort: number): Promise<Binding> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    const upstream = connect({ host: podIp, port: containerPort });
    track(upstream);
    upstream.on('connect', () => {
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: hostIp, port: hostPort, exclusive: true }, () => {
      server.off('error', reject);
      resolve({ server, sockets });
    });
  });
}

function close(binding: Binding): void {
  binding.server.close();
  for (const s of binding.sockets) s.destroy();
}
