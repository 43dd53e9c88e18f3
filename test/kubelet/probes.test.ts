import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { V1Container, V1Probe } from '@kubernetes/client-node';
import { CommandTimedOutError, effectiveProbe, resolveContainerPort, runProbe, type ExecInContainer, type ProbeTarget } from '../../src/kubelet/probes.js';
import { runInContainer } from '../../src/kubelet/container-exec.js';
import { useScriptedRuntime } from './support/scripted-runtime.js';

// Texts follow kubernetes v1.34.12 pkg/probe/http/http.go, tcp/tcp.go, exec/exec.go, grpc/grpc.go,
// pkg/probe/util.go and pkg/kubelet/prober/prober.go.

const container = (extra: Partial<V1Container> = {}): V1Container => ({ name: 'web', image: 'nginx', ...extra });
const target = (extra: Partial<ProbeTarget> = {}): ProbeTarget => ({ container: container(), containerId: 'ctr-1', podIp: '127.0.0.1', ...extra });
const noExec: ExecInContainer = () => Promise.reject(new Error('no exec expected'));
const probe = (spec: V1Probe) => effectiveProbe(spec);

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const server = createTcpServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('probes (one run of a container probe)', () => {
  it('applies the API defaults to a probe', () => {
    expect(effectiveProbe({ exec: { command: ['x'] } })).to.deep.include({ initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3 });
  });

  describe('httpGet', () => {
    let server: Server;
    let port: number;
    let seen: { url: string; headers: IncomingHttpHeaders }[];
    beforeEach(async () => {
      seen = [];
      server = createServer((req, res) => {
        seen.push({ url: req.url ?? '', headers: req.headers });
        if (req.url === '/healthz') res.writeHead(200).end('ok');
        else if (req.url === '/hop') res.writeHead(302, { Location: '/healthz' }).end();
        else if (req.url === '/away') res.writeHead(301, { Location: 'http://localhost:1/' }).end('moved');
        else if (req.url === '/loop') res.writeHead(302, { Location: '/loop' }).end();
        else if (req.url === '/slow') setTimeout(() => res.writeHead(200).end(), 3000).unref();
        else res.writeHead(503).end('down');
      });
      port = await listen(server);
    });
    afterEach(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('succeeds on 200 and sends the kubelet User-Agent, Accept and the headers given', async () => {
      const outcome = await runProbe(probe({ httpGet: { path: '/healthz', port, httpHeaders: [{ name: 'x-probe', value: 'yes' }] } }), target(), noExec);
      expect(outcome).to.deep.equal({ result: 'success', output: 'ok' });
      expect(seen[0]!.headers['user-agent']).to.equal('kube-probe/1.34');
      expect(seen[0]!.headers['accept']).to.equal('*/*');
      expect(seen[0]!.headers['x-probe']).to.equal('yes');
      expect(seen[0]!.headers['host']).to.equal(`127.0.0.1:${port}`);
    });

    it('fails on 503 with the status code text', async () => {
      const outcome = await runProbe(probe({ httpGet: { path: '/status', port } }), target(), noExec);
      expect(outcome).to.deep.equal({ result: 'failure', output: 'HTTP probe failed with statuscode: 503' });
    });

    it('follows a redirect to the same host', async () => {
      const outcome = await runProbe(probe({ httpGet: { path: '/hop', port } }), target(), noExec);
      expect(outcome).to.deep.equal({ result: 'success', output: 'ok' });
      expect(seen.map((s) => s.url)).to.deep.equal(['/hop', '/healthz']);
    });

    it('does not follow a redirect to another host: a warning with the body', async () => {
      const outcome = await runProbe(probe({ httpGet: { path: '/away', port } }), target(), noExec);
      expect(outcome).to.deep.equal({ result: 'warning', output: 'Probe terminated redirects, Response body: moved' });
    });

    it('stops after 10 redirects', async () => {
      const outcome = await runProbe(probe({ httpGet: { path: '/loop', port } }), target(), noExec);
      expect(outcome).to.deep.equal({ result: 'failure', output: `Get "http://127.0.0.1:${port}/loop": stopped after 10 redirects` });
    });

    it('fails with Go\'s texts when nothing listens or the answer is late', async () => {
      const closed = await closedPort();
      expect(await runProbe(probe({ httpGet: { path: '/', port: closed } }), target(), noExec)).to.deep.equal({
        result: 'failure',
        output: `Get "http://127.0.0.1:${closed}/": dial tcp 127.0.0.1:${closed}: connect: connection refused`,
      });
      expect(await runProbe(probe({ httpGet: { path: '/slow', port }, timeoutSeconds: 1 }), target(), noExec)).to.deep.equal({
        result: 'failure',
        output: `Get "http://127.0.0.1:${port}/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      });
    });

    it('resolves a named container port, and errors on a name the container lacks', async () => {
      const named = target({ container: container({ ports: [{ name: 'http', containerPort: port }] }) });
      expect(await runProbe(probe({ httpGet: { path: '/healthz', port: 'http' } }), named, noExec)).to.deep.equal({ result: 'success', output: 'ok' });
      const outcome = await runProbe(probe({ httpGet: { path: '/healthz', port: 'metrics' } }), named, noExec);
      expect(outcome.result).to.equal('unknown');
      expect(outcome.error?.message).to.equal('strconv.Atoi: parsing "metrics": invalid syntax');
    });
  });

  it('resolveContainerPort refuses ports out of range', () => {
    expect(() => resolveContainerPort(0, container())).to.throw('invalid port number: 0');
    expect(() => resolveContainerPort('70000', container())).to.throw('invalid port number: 70000');
    expect(resolveContainerPort('8080', container())).to.equal(8080);
  });

  it('tcpSocket succeeds when the port accepts and fails with the dial text when not', async () => {
    const server = createTcpServer((s) => s.destroy());
    const port = await listen(server);
    try {
      expect(await runProbe(probe({ tcpSocket: { port } }), target(), noExec)).to.deep.equal({ result: 'success', output: '' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    const closed = await closedPort();
    expect(await runProbe(probe({ tcpSocket: { port: closed } }), target(), noExec)).to.deep.equal({ result: 'failure', output: `dial tcp 127.0.0.1:${closed}: connect: connection refused` });
  });

  describe('exec', () => {
    it('runs the command with the static environment expanded and the probe timeout; exit 0 succeeds', async () => {
      const calls: { id: string; cmd: readonly string[]; timeout: number }[] = [];
      const exec: ExecInContainer = (id, cmd, timeout) => {
        calls.push({ id, cmd, timeout });
        return Promise.resolve({ exitCode: 0, output: Buffer.from('fine\n') });
      };
      const c = container({ env: [{ name: 'FILE', value: 'C:\\ready' }, { name: 'FROM', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }] });
      const outcome = await runProbe(probe({ exec: { command: ['cmd', '/c', 'type', '$(FILE)', '$(FROM)'] }, timeoutSeconds: 5 }), target({ container: c }), exec);
      expect(outcome).to.deep.equal({ result: 'success', output: 'fine\n' });
      expect(calls).to.deep.equal([{ id: 'ctr-1', cmd: ['cmd', '/c', 'type', 'C:\\ready', '$(FROM)'], timeout: 5 }]);
    });

    it('fails on a non-zero exit with the output, and on a timeout with its text', async () => {
      const failing: ExecInContainer = () => Promise.resolve({ exitCode: 1, output: Buffer.from('not ready') });
      expect(await runProbe(probe({ exec: { command: ['cmd', '/c', 'exit 1'] } }), target(), failing)).to.deep.equal({ result: 'failure', output: 'not ready' });
      const slow: ExecInContainer = () => Promise.reject(new CommandTimedOutError('command timed out: "ping -n 9 127.0.0.1" timed out after 1s'));
      expect(await runProbe(probe({ exec: { command: ['ping', '-n', '9', '127.0.0.1'] } }), target(), slow)).to.deep.equal({
        result: 'failure',
        output: 'command timed out: "ping -n 9 127.0.0.1" timed out after 1s',
      });
    });

    it('reports a runtime error as an error (unknown), not a failure', async () => {
      const broken: ExecInContainer = () => Promise.reject(new Error('rpc error: code = NotFound desc = container not found'));
      const outcome = await runProbe(probe({ exec: { command: ['x'] } }), target(), broken);
      expect(outcome.result).to.equal('unknown');
      expect(outcome.error?.message).to.equal('rpc error: code = NotFound desc = container not found');
    });
  });

  describe('grpc (grpc.health.v1.Health/Check)', () => {
    let server: grpc.Server;
    let port: number;
    let statuses: Record<string, number>;
    beforeEach(async () => {
      statuses = { '': 1, db: 2 };
      server = new grpc.Server();
      server.addService(
        {
          Check: {
            path: '/grpc.health.v1.Health/Check',
            requestStream: false,
            responseStream: false,
            requestSerialize: (r: { service: string }) => Buffer.from(r.service),
            // HealthCheckRequest: field 1 (tag 0x0a, one length byte here), absent for "".
            requestDeserialize: (b: Buffer) => ({ service: b.length === 0 ? '' : b.subarray(2).toString() }),
            responseSerialize: (n: number) => (n === 0 ? Buffer.alloc(0) : Buffer.from([0x08, n])),
            responseDeserialize: (b: Buffer) => b[1] ?? 0,
          },
        },
        {
          Check: (call: grpc.ServerUnaryCall<{ service: string }, number>, callback: grpc.sendUnaryData<number>) => {
            const status = statuses[call.request.service];
            if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
            else callback(null, status);
          },
        },
      );
      port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    });
    afterEach(() => server.forceShutdown());

    it('succeeds for SERVING and fails with the status name otherwise', async () => {
      expect(await runProbe(probe({ grpc: { port } }), target(), noExec)).to.deep.equal({ result: 'success', output: 'service healthy' });
      expect(await runProbe(probe({ grpc: { port, service: 'db' } }), target(), noExec)).to.deep.equal({ result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
      expect(await runProbe(probe({ grpc: { port, service: 'cache' } }), target(), noExec)).to.deep.equal({
        result: 'failure',
        output: 'error: health rpc probe failed: rpc error: code = NotFound desc = unknown service',
      });
    });

    it('fails with the connect text when nothing listens within the timeout', async () => {
      const closed = await closedPort();
      expect(await runProbe(probe({ grpc: { port: closed } }), target(), noExec)).to.deep.equal({
        result: 'failure',
        output: `timeout: failed to connect service "127.0.0.1:${closed}" within 1s: context deadline exceeded`,
      });
    });
  });

  describe('exec over CRI ExecSync (RunInContainer)', () => {
    const fx = useScriptedRuntime('winsim-probe-exec-');
    const exec = (): ExecInContainer => runInContainer(fx.cri, 5000);

    it("sends the probe's timeout and quotes stdout then stderr; the exit code decides", async () => {
      expect(await runProbe(probe({ exec: { command: ['exit', '3'] }, timeoutSeconds: 2 }), target(), exec())).to.deep.equal({ result: 'failure', output: 'out;err' });
      expect(await runProbe(probe({ exec: { command: ['exit', '0'] } }), target(), exec())).to.deep.equal({ result: 'success', output: 'out;err' });
      expect(fx.runtime.execs).to.deep.equal([{ cmd: ['exit', '3'], timeout: 2 }, { cmd: ['exit', '0'], timeout: 1 }]);
    });

    it("a command the runtime timed out is a failure with cri-client's text; another refusal is an error", async () => {
      expect(await runProbe(probe({ exec: { command: ['slow', 'job'] } }), target(), exec())).to.deep.equal({ result: 'failure', output: 'command timed out: "slow job" timed out after 1s' });
      const outcome = await runProbe(probe({ exec: { command: ['gone'] } }), target(), exec());
      expect(outcome.result).to.equal('unknown');
      expect(outcome.error?.message).to.equal('rpc error: code = NotFound desc = container ctr-1 not found');
    });
  });
});
