// The kubelet's HTTPS server against a real cri-winsim runtime over its socket. Texts follow
// pkg/kubelet/server/server.go, auth.go (v1.34), k8s.io/kubelet pkg/cri/streaming (v0.34) and
// k8s.io/cri-client pkg/logs (v0.34) unless a test says they are our own.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { createCriClient, unaryCall, type CriClient } from '../../../src/cri/proto.js';
import { startKubeletServer, type KubeletServer } from '../../../src/kubelet/server/index.js';
import { runPodOnce } from '../../../src/kubelet/pod-worker.js';
import { startRuntime, type RuntimeHandle } from '../../support/runtime.js';
import { createTestCa } from './client-certificates.js';
import { kubeletRequest, kubeletStream } from './https.js';

const IMAGE = 'mcr.microsoft.com/windows/servercore:ltsc2022';
const NODE = 'winnode-http';

function pod(name: string, containers: { name: string; command: string[] }[]): V1Pod {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, namespace: 'default', uid: randomUUID(), creationTimestamp: new Date('2026-01-02T03:04:05.678Z') },
    spec: { nodeName: NODE, containers: containers.map((c) => ({ ...c, image: IMAGE, imagePullPolicy: 'IfNotPresent' })) },
  };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('kubelet HTTPS server (against the cri-winsim runtime)', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let server: KubeletServer;
  let client: { cert: string; key: string };
  let stranger: { cert: string; key: string };
  const pods: V1Pod[] = [];
  const logger = pod('logger', [
    { name: 'ticker', command: ['sh', '-c', 'echo first; echo second >&2; while true; do echo tick; sleep 1; done'] },
    { name: 'once', command: ['sh', '-c', 'echo line1; echo line2; echo line3'] },
  ]);

  before(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    const ca = await createTestCa('kubelet-client-ca');
    client = await ca.issue('alice', ['developers', 'ops']);
    stranger = await (await createTestCa('someone-else')).issue('mallory');
    const caFile = join(runtime.dir, 'client-ca.crt');
    await writeFile(caFile, ca.certPem);
    const outcome = await runPodOnce(cri, logger, { podLogsRoot: join(runtime.dir, 'pods'), nodeName: NODE });
    expect(outcome.containers.map((c) => c.state)).to.deep.equal(['started', 'started']);
    pods.push(logger);
    server = await startKubeletServer({
      port: 0, nodeName: NODE, cri, pods: () => pods, clientCaFile: caFile,
      anonymousAuth: false, authorizationMode: 'AlwaysAllow', memoryCapacityBytes: 8 * 2 ** 30,
    });
    // The short-lived container has written its three lines and exited.
    await waitFor('container "once" to exit', async () => {
      const { containers } = await unaryCall(cri.runtime, 'ListContainers', { filter: { label_selector: { 'io.kubernetes.container.name': 'once' } } });
      return containers[0]?.state === 2 ? true : undefined;
    });
  });
  after(async () => {
    await server?.close();
    cri?.close();
    await runtime?.stop();
  });

  const as = (id: { cert: string; key: string }) => ({ cert: id.cert, key: id.key });

  describe('authentication', () => {
    it('refuses a request with no credentials: 401 Unauthorized', async () => {
      const res = await kubeletRequest(server.port, '/healthz');
      expect([res.status, res.body]).to.deep.equal([401, 'Unauthorized']);
    });

    it('accepts a client certificate signed by --client-ca-file', async () => {
      const res = await kubeletRequest(server.port, '/healthz', as(client));
      expect([res.status, res.body]).to.deep.equal([200, 'ok']);
    });

    it('refuses a client certificate of another authority: 401', async () => {
      const res = await kubeletRequest(server.port, '/pods', as(stranger));
      expect([res.status, res.body]).to.deep.equal([401, 'Unauthorized']);
    });

    it('refuses a bearer token when no API server can review it', async () => {
      const res = await kubeletRequest(server.port, '/healthz', { headers: { Authorization: 'Bearer abc' } });
      expect(res.status).to.equal(401);
    });

    it('serves a self-signed certificate for the node name and its address', async () => {
      const res = await kubeletRequest(server.port, '/healthz', as(client));
      expect(res.peer.subject.CN).to.match(new RegExp(`^${NODE}@\\d+$`));
      expect(res.peer.issuer.CN).to.match(new RegExp(`^${NODE}-ca@\\d+$`));
      expect(res.peer.subjectaltname).to.equal(`DNS:${NODE}, IP Address:127.0.0.1`);
    });

    it('serves anonymous requests when --anonymous-auth is on', async () => {
      const open = await startKubeletServer({ port: 0, nodeName: NODE, cri, pods: () => pods, anonymousAuth: true, authorizationMode: 'AlwaysAllow' });
      try {
        const res = await kubeletRequest(open.port, '/healthz?verbose');
        expect([res.status, res.body]).to.deep.equal([200, '[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n']);
      } finally {
        await open.close();
      }
    });

    // The certificate and the HTTPS server are made at the first connection (a node nobody
    // connects to holds its listening socket only); connections that arrive meanwhile wait, with
    // nothing read from them, and all are served with the one certificate.
    it('serves the connections that arrive while its certificate is being made, with one certificate', async () => {
      const open = await startKubeletServer({ port: 0, nodeName: NODE, cri, pods: () => pods, anonymousAuth: true, authorizationMode: 'AlwaysAllow' });
      try {
        const answers = await Promise.all(Array.from({ length: 5 }, () => kubeletRequest(open.port, '/healthz')));
        expect(answers.map((r) => [r.status, r.body])).to.deep.equal(Array.from({ length: 5 }, () => [200, 'ok']));
        expect(new Set(answers.map((r) => r.peer.fingerprint256)).size).to.equal(1);
      } finally {
        await open.close();
      }
    });

    it('refuses to start without any authentication method, on a non-loopback address, or Webhook without a client', async () => {
      const base = { port: 0, nodeName: NODE, cri, pods: () => pods };
      const failure = async (p: Promise<unknown>): Promise<string> => p.then(() => 'started', (err: Error) => err.message);
      expect(await failure(startKubeletServer({ ...base, anonymousAuth: false, authorizationMode: 'AlwaysAllow' }))).to.equal('no authentication method configured');
      expect(await failure(startKubeletServer({ ...base, anonymousAuth: true, authorizationMode: 'Webhook' }))).to.equal('no client provided, cannot use webhook authorization');
      expect(await failure(startKubeletServer({ ...base, address: '10.0.0.1', anonymousAuth: true, authorizationMode: 'AlwaysAllow' }))).to.match(/^--address: 10\.0\.0\.1 is not a loopback address/);
      expect(await failure(startKubeletServer({ ...base, anonymousAuth: true, authorizationMode: 'AlwaysAllow', clientCaFile: join(runtime.dir, 'missing.crt') }))).to.match(/^--client-ca-file: cannot read .*missing\.crt/);
    });
  });

  describe('/pods and stats', () => {
    it('/pods is the PodList of the pods bound to the node', async () => {
      const res = await kubeletRequest(server.port, '/pods', as(client));
      expect(res.status).to.equal(200);
      expect(res.headers['content-type']).to.equal('application/json');
      const list = JSON.parse(res.body) as { kind: string; apiVersion: string; items: V1Pod[] };
      expect([list.kind, list.apiVersion]).to.deep.equal(['PodList', 'v1']);
      expect(list.items.map((p) => p.metadata?.uid)).to.deep.equal([logger.metadata!.uid]);
      // metav1.Time: RFC3339 seconds.
      expect(list.items[0]!.metadata!.creationTimestamp).to.equal('2026-01-02T03:04:05Z');
    });

    it('/stats/summary reports the node and each pod from CRI stats', async () => {
      const res = await kubeletRequest(server.port, '/stats/summary', as(client));
      expect(res.status).to.equal(200);
      const summary = JSON.parse(res.body) as { node: { nodeName: string; memory: { workingSetBytes: number; availableBytes: number } }; pods: { podRef: { name: string; uid: string }; containers: { name: string; cpu?: unknown; memory?: { workingSetBytes: number } }[]; memory: { workingSetBytes: number } }[] };
      expect(summary.node.nodeName).to.equal(NODE);
      const p = summary.pods.find((x) => x.podRef.uid === logger.metadata!.uid)!;
      expect(p.podRef.name).to.equal('logger');
      // Only the running container is in the sandbox's stats.
      expect(p.containers.map((c) => c.name)).to.deep.equal(['ticker']);
      expect(p.containers[0]!.memory!.workingSetBytes).to.be.greaterThan(0);
      expect(summary.node.memory.workingSetBytes).to.equal(p.memory.workingSetBytes);
      expect(summary.node.memory.availableBytes).to.equal(8 * 2 ** 30 - p.memory.workingSetBytes);
    });

    it('/metrics/resource carries the resource metrics of the running container', async () => {
      const res = await kubeletRequest(server.port, '/metrics/resource', as(client));
      expect(res.status).to.equal(200);
      expect(res.body).to.include('# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds');
      expect(res.body).to.match(/^container_memory_working_set_bytes\{container="ticker",namespace="default",pod="logger"\} \d+ \d+$/m);
      expect(res.body).to.match(/^resource_scrape_error 0$/m);
    });

    it('/metrics counts the requests it served', async () => {
      const res = await kubeletRequest(server.port, '/metrics', as(client));
      expect(res.status).to.equal(200);
      expect(res.body).to.match(/^kubelet_http_requests_total\{method="GET",path="healthz",server_type="readwrite",long_running="false"\} [1-9]\d*$/m);
      expect(res.body).to.match(/^kubelet_running_containers\{container_state="running"\} 1$/m);
      expect(res.body).to.include(`kubelet_node_name{node="${NODE}"} 1`);
    });

    it('/metrics/cadvisor is not implemented: 501 with the reason', async () => {
      const res = await kubeletRequest(server.port, '/metrics/cadvisor', as(client));
      expect(res.status).to.equal(501);
      expect(res.body).to.match(/is not implemented by cri-winsim/);
    });
  });

  describe('/containerLogs', () => {
    const logs = (query: string, container = 'once') => kubeletRequest(server.port, `/containerLogs/default/logger/${container}${query}`, as(client));

    it('returns the whole log of a container', async () => {
      const res = await logs('');
      expect([res.status, res.body]).to.deep.equal([200, 'line1\nline2\nline3\n']);
    });

    it('honours tailLines, limitBytes and timestamps', async () => {
      expect((await logs('?tailLines=1')).body).to.equal('line3\n');
      expect((await logs('?tail=2')).body).to.equal('line2\nline3\n');
      expect((await logs('?limitBytes=8')).body).to.equal('line1\nli');
      expect((await logs('?tailLines=1&timestamps=true')).body).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line3\n$/);
      expect((await logs('?sinceTime=2000-01-01T00:00:00Z')).body).to.equal('line1\nline2\nline3\n');
      expect((await logs('?sinceSeconds=3600')).body).to.equal('line1\nline2\nline3\n');
    });

    it('merges stdout and stderr in the order they were written', async () => {
      const res = await kubeletStream(server.port, '/containerLogs/default/logger/ticker', as(client), (t) => t.includes('tick\n'));
      expect(res.body.startsWith('first\nsecond\ntick\n')).to.equal(true);
    });

    it('follows a running container until the client goes away', async () => {
      const res = await kubeletStream(server.port, '/containerLogs/default/logger/ticker?follow=true&tailLines=0', as(client), (t) => t.split('tick\n').length >= 3);
      expect(res.status).to.equal(200);
      expect(res.body).to.equal('tick\ntick\n');
    });

    it('stops following when the container exits', async () => {
      const waiting = kubeletStream(server.port, '/containerLogs/default/logger/ticker?follow=true&tailLines=1', { ...as(client), timeoutMs: 20_000 }, () => false);
      await new Promise((r) => setTimeout(r, 1500));
      const { containers } = await unaryCall(cri.runtime, 'ListContainers', { filter: { label_selector: { 'io.kubernetes.container.name': 'ticker' } } });
      await unaryCall(cri.runtime, 'StopContainer', { container_id: containers[0]!.id, timeout: '1' }, { timeoutMs: 10_000 });
      const res = await waiting;
      expect(res.ended).to.equal(true);
      expect(res.body).to.match(/^(tick\n)+$/);
    });

    it('answers bad requests with the kubelet texts', async () => {
      expect(await logs('?tailLines=-1').then((r) => [r.status, r.body])).to.deep.equal([422, '{"message": "Invalid request."}']);
      expect(await logs('?sinceSeconds=5&sinceTime=2000-01-01T00:00:00Z').then((r) => [r.status, r.body])).to.deep.equal([422, '{"message": "Invalid request."}']);
      expect(await logs('?tailLines=many').then((r) => [r.status, r.body])).to.deep.equal([400, '{"message": "Unable to decode query."}']);
      expect(await logs('?follow=maybe').then((r) => [r.status, r.body])).to.deep.equal([400, '{"message": "Unable to decode query."}']);
      expect(await logs('?stream=Stdout').then((r) => [r.status, r.body])).to.deep.equal([400, 'unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet']);
      expect(await logs('', 'nosuch').then((r) => [r.status, r.body])).to.deep.equal([404, 'container "nosuch" not found in pod "logger"']);
      const missing = await kubeletRequest(server.port, '/containerLogs/default/ghost/once', as(client));
      expect([missing.status, missing.body]).to.deep.equal([404, 'pod "ghost" does not exist']);
      expect(await logs('?previous=true').then((r) => [r.status, r.body])).to.deep.equal([400, 'previous terminated container "once" in pod "logger" not found']);
    });
  });

  describe('/run, /exec, /attach, /portForward', () => {
    it('POST /run runs the command with ExecSync and returns its output', async () => {
      const res = await kubeletRequest(server.port, '/run/default/logger/once?cmd=echo%20hello', { ...as(client), method: 'POST' });
      // "once" has exited: the kubelet finds only running containers.
      expect([res.status, res.body]).to.deep.equal([500, 'container not found ("once")']);
      const ticker = pod('runner', [{ name: 'app', command: ['sh', '-c', 'while true; do sleep 1; done'] }]);
      await runPodOnce(cri, ticker, { podLogsRoot: join(runtime.dir, 'pods'), nodeName: NODE });
      pods.push(ticker);
      const ok = await kubeletRequest(server.port, '/run/default/runner/app?cmd=echo%20hello', { ...as(client), method: 'POST' });
      expect([ok.status, ok.body]).to.deep.equal([200, 'hello\n']);
      const failed = await kubeletRequest(server.port, '/run/default/runner/app?cmd=cmd%20/c%20exit%203', { ...as(client), method: 'POST' });
      expect([failed.status, failed.body]).to.deep.equal([500, "command 'cmd /c exit 3' exited with 3: "]);
      const get = await kubeletRequest(server.port, '/run/default/runner/app?cmd=echo%20hello', as(client));
      expect(get.status).to.equal(405);
    });

    it('/exec needs at least one stream', async () => {
      const res = await kubeletRequest(server.port, '/exec/default/runner/app?command=whoami', { ...as(client), method: 'POST' });
      expect([res.status, res.body]).to.deep.equal([400, 'you must specify at least 1 of stdin, stdout, stderr']);
    });

    it('/exec is proxied to the runtime\'s streaming server (WebSocket, v5.channel.k8s.io)', async () => {
      const { port } = server;
      const frames = await new Promise<Buffer[]>((resolve, reject) => {
        const got: Buffer[] = [];
        const ws = new WebSocket(`wss://127.0.0.1:${port}/exec/default/runner/app?command=cmd&command=/c&command=echo%20hello&output=1&error=1`, ['v5.channel.k8s.io'], {
          ...as(client), rejectUnauthorized: false,
        });
        const timer = setTimeout(() => { ws.terminate(); reject(new Error(`no end of exec; frames ${JSON.stringify(got.map(String))}`)); }, 15_000);
        ws.on('message', (data: Buffer) => got.push(Buffer.from(data)));
        ws.on('close', () => { clearTimeout(timer); resolve(got); });
        ws.on('error', (err) => { clearTimeout(timer); reject(err); });
      });
      const stdout = Buffer.concat(frames.filter((f) => f[0] === 1).map((f) => f.subarray(1))).toString();
      const status = frames.filter((f) => f[0] === 3).map((f) => f.subarray(1).toString()).join('');
      expect(stdout.replace(/\r\n/g, '\n')).to.equal('hello\n');
      // remotecommand v4+ status on the error channel (apimachinery, v0.34).
      expect(JSON.parse(status)).to.deep.equal({ metadata: {}, status: 'Success' });
    });

    it('/exec without an upgrade is refused after the runtime answered: 500 Upgrade request required', async () => {
      const res = await kubeletRequest(server.port, '/exec/default/runner/app?command=whoami&output=1', { ...as(client), method: 'POST' });
      expect([res.status, res.body]).to.deep.equal([500, 'Upgrade request required']);
    });

    it('/exec of a container that is not running: the kubelet\'s text', async () => {
      const upgrade = { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' };
      const res = await kubeletRequest(server.port, '/exec/default/logger/once?command=whoami&output=1', { ...as(client), method: 'POST', headers: upgrade });
      expect([res.status, res.body]).to.deep.equal([500, 'container not found ("once")']);
      const attach = await kubeletRequest(server.port, '/attach/default/logger/once?output=1', { ...as(client), method: 'POST', headers: upgrade });
      expect([attach.status, attach.body]).to.deep.equal([500, 'container once not found in pod logger_default']);
      const missing = await kubeletRequest(server.port, '/portForward/default/ghost', { ...as(client), method: 'POST', headers: upgrade });
      expect([missing.status, missing.body]).to.deep.equal([404, 'pod does not exist']);
    });
  });
});
