// Pods in the node's network (hostNetwork): their servers listen on the node's address
// (127.0.0.1 here) and PortForward connects there, as critest's "portforward in host network"
// (cri-tools v1.34.0 pkg/validate/streaming_linux.go) expects of hostnet-nginx (port 12003; the
// critest e2e runs that spec itself). Such a sandbox gets no pod network: no IP from the pod
// range and no portmap host ports (containerd v2.2.7 internal/cri/server/sandbox_run.go sets up
// the network only `if !hostNetwork(config)`), and PodSandboxStatus reports no IP for it
// (sandbox_status.go getIPs; helpers.go hostNetwork: Linux namespace option NODE, on Windows a
// HostProcess pod).
import { expect } from 'chai';
import { connect } from 'node:net';
import { WebSocket } from 'ws';
import { isHostNetwork, podListenAddress } from '../../../src/runtime/network/host-network.js';
import { imageFile } from '../../../src/runtime/images/catalogue.js';
import { createContainer, openRuntime, pull, runSandbox, sandboxConfig, type RuntimeFixture } from '../helpers.js';

const HOSTNET_NGINX = 'gcr.io/k8s-staging-cri-tools/hostnet-nginx-amd64';
const NODE = 2;

/** GETs / through a WebSocket port-forward (the kubelet's v4 channels) and returns the answer. */
function getThroughPortForward(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
    let port = -1;
    let text = '';
    ws.on('message', (m: Buffer) => {
      if (m[0] !== 0) return;
      if (port < 0) port = m.readUInt16LE(1);
      else text += m.subarray(1).toString();
    });
    ws.on('open', () => ws.send(Buffer.concat([Buffer.of(0), Buffer.from('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')])));
    ws.on('error', reject);
    ws.on('close', () => resolve(text));
  });
}

describe('runtime: pods in the node\'s network', function () {
  this.timeout(30_000);
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
  });
  afterEach(async () => fx.close());

  it('tells a host-network pod by its Linux namespace option NODE or a Windows HostProcess pod', () => {
    const linux = (network: number) => sandboxConfig({ linux: { security_context: { namespace_options: { network } } } as never });
    expect(isHostNetwork(linux(NODE))).to.equal(true);
    expect(isHostNetwork(linux(0))).to.equal(false);
    expect(isHostNetwork(sandboxConfig({ windows: { security_context: { host_process: true } } } as never))).to.equal(true);
    expect(isHostNetwork(sandboxConfig())).to.equal(false);
    expect(podListenAddress({ ip: '127.10.0.2', config: linux(NODE) })).to.equal('127.0.0.1');
    expect(podListenAddress({ ip: '127.10.0.2', config: linux(0) })).to.equal('127.10.0.2');
  });

  it('reports no IP for a sandbox in the node\'s network and takes none from the pod range', async () => {
    const ipOf = async (id: string) => (await fx.runtime.podSandboxStatus({ pod_sandbox_id: id, verbose: false })).status?.network;
    const first = await runSandbox(fx.runtime);
    const firstIp = (await ipOf(first.id))?.ip ?? '';
    expect(firstIp).to.match(/^127\.\d+\.\d+\.\d+$/);
    // What the kubelet v1.34 sends for hostNetwork (generatePodSandboxLinuxConfig, on Windows too)
    // and for a HostProcess pod (generatePodSandboxWindowsConfig).
    const hostNet = await runSandbox(fx.runtime, { linux: { cgroup_parent: '', security_context: { namespace_options: { network: NODE, pid: 0, ipc: 0, target_id: '', userns_options: null } } } as never });
    const hostProcess = await runSandbox(fx.runtime, {
      linux: { cgroup_parent: '', security_context: { namespace_options: { network: NODE, pid: 1, ipc: 0, target_id: '', userns_options: null } } } as never,
      windows: { security_context: { host_process: true, run_as_username: '', credential_spec: '', namespace_options: null } } as never,
    });
    for (const id of [hostNet.id, hostProcess.id]) {
      const status = (await fx.runtime.podSandboxStatus({ pod_sandbox_id: id, verbose: false })).status;
      expect(status?.state, 'the sandbox is ready').to.equal(0);
      expect(status?.network).to.deep.equal({ ip: '', additional_ips: [] });
    }
    // The pool handed out nothing for them: the next pod-network sandbox gets the next address.
    const next = await runSandbox(fx.runtime);
    const nextIp = (await ipOf(next.id))?.ip ?? '';
    const host = (ip: string) => Number(ip.split('.')[3]);
    expect(host(nextIp)).to.equal(host(firstIp) + 1);
    expect(nextIp.split('.').slice(0, 3)).to.deep.equal(firstIp.split('.').slice(0, 3));
  });

  it('hostnet-nginx carries its site configuration (listen 12003), read by reference', () => {
    expect(imageFile(HOSTNET_NGINX, '/etc/nginx/conf.d/default.conf')).to.match(/^\s*listen\s+12003;/m);
    expect(imageFile(`${HOSTNET_NGINX}:latest`, '/etc/nginx/conf.d/default.conf')).to.match(/listen\s+12003;/);
    expect(imageFile('registry.k8s.io/e2e-test-images/nginx:1.14-2', '/etc/nginx/conf.d/default.conf')).to.equal(undefined);
  });

  it('serves nginx of a host-network pod on 127.0.0.1 at its host port and port-forwards to it there', async () => {
    // The port comes from the container's own site configuration (written before nginx starts),
    // not hostnet-nginx's 12003: a critest run on this machine may hold that one.
    const port = 20000 + Math.floor(Math.random() * 20000);
    await pull(fx.runtime, HOSTNET_NGINX);
    // With hostNetwork the kubelet sends each container port as a host port of the same number
    // (API defaulting). No portmap rule is set up for it: nginx itself holds the node's port.
    const sandbox = await runSandbox(fx.runtime, {
      linux: { cgroup_parent: '', security_context: { namespace_options: { network: NODE, pid: 0, ipc: 0, target_id: '', userns_options: null } } } as never,
      port_mappings: [{ protocol: 0, container_port: port, host_port: port, host_ip: '' }],
    });
    const container = await createContainer(fx.runtime, sandbox, {
      command: ['sh', '-c', `echo 'server { listen ${port}; }' > /etc/nginx/conf.d/default.conf; nginx -g 'daemon off;'`],
    }, HOSTNET_NGINX);
    await fx.runtime.startContainer({ container_id: container });
    let page: Response | undefined;
    for (let i = 0; i < 50 && page === undefined; i++) {
      page = await fetch(`http://127.0.0.1:${port}/`, { headers: { Connection: 'close' } }).catch(async () => {
        await new Promise((r) => setTimeout(r, 100));
        return undefined;
      });
    }
    expect(page?.status).to.equal(200);
    expect(page?.headers.get('server')).to.equal('nginx/1.25.0');
    expect(await page?.text()).to.contain('Welcome to nginx!');
    const url = (await fx.runtime.portForward({ pod_sandbox_id: sandbox.id, port: [port] })).url ?? '';
    const answer = await getThroughPortForward(url);
    expect(answer).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    expect(answer).to.contain('Welcome to nginx!');
    // Stopping the pod ends nginx and frees the node's port.
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sandbox.id });
    const after = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('connect', () => { socket.destroy(); resolve('connected'); });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
    expect(after).to.equal('ECONNREFUSED');
  });
});
