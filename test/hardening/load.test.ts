// Load on the runtime's socket: a thousand concurrent client connections (fewer when the open
// file limit cannot hold them, said in the output), a client that asks for a big list and never
// reads it, deadlines that expire in the middle of RunPodSandbox and CreateContainer, and a
// ListContainers answer over the 16 MiB gRPC message limit. The runtime keeps answering everyone
// else, ends each call with a status, and its state stays consistent. Counts: HARDENING_CONNECTIONS
// (default 1000).
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { connect as http2Connect, constants as http2Constants } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';
import {
  BUSYBOX,
  IIS,
  codeName,
  crashLines,
  credentialSpecFiles,
  removeEverything,
  startHardeningRuntime,
  type HardeningRuntime,
} from './support.js';

/** The soft open file limit of this process (what `ulimit -n` says). */
function openFileLimit(): number {
  try {
    const text = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
    return text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text);
  } catch {
    return 1024;
  }
}

/**
 * The answer of `list` once it has stayed the same for a second (polled every 250 ms, at most
 * 30 s): the state after the calls a client gave up on have finished on the runtime's side.
 */
async function settledList<T>(list: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  let last = await list();
  let sameSince = Date.now();
  while (Date.now() - sameSince < 1_000 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    const next = await list();
    if (JSON.stringify(next) !== JSON.stringify(last)) sameSince = Date.now();
    last = next;
  }
  return last;
}

describe('hardening: load on the CRI socket', function () {
  this.timeout(180_000);
  let h: HardeningRuntime | undefined;
  const runtime = (): HardeningRuntime => {
    if (h === undefined) throw new Error('no runtime (see the before all hook)');
    return h;
  };
  const pod = (name: string) => ({ metadata: { name, namespace: 'hardening-load', uid: `uid-${name}`, attempt: 0 } });

  before(async () => {
    h = await startHardeningRuntime('hardening-load');
    await h.call('image', 'PullImage', { image: { image: BUSYBOX } });
    await h.call('image', 'PullImage', { image: { image: IIS } });
  });

  afterEach(async () => {
    if (h !== undefined) await removeEverything(h);
  });

  after(async () => {
    const left = h === undefined ? [] : crashLines(h.rt.output());
    await h?.stop();
    expect(left, 'exceptions in the runtime output').to.deep.equal([]);
  });

  it('leaves its socket with mode 0660, as containerd does (pkg/sys/socket_unix.go chmods 0660)', () => {
    const info = statSync(runtime().rt.socketPath);
    expect(info.isSocket()).to.equal(true);
    expect((info.mode & 0o777).toString(8)).to.equal('660');
  });

  it('serves a burst of 1,000 concurrent client connections (listen backlog 4096; bounded by the open file limit)', async () => {
    const wanted = Number(process.env.HARDENING_CONNECTIONS ?? 1000);
    const limit = openFileLimit();
    // Each end of every connection is a descriptor in its process (this one, the runtime), on top
    // of what each has open already.
    const connections = Math.max(1, Math.min(wanted, limit - 256));
    if (connections < wanted) {
      console.log(`      open file limit (ulimit -n) is ${limit}: ${connections} connections instead of ${wanted}; raise it with ulimit -n`);
    }
    const clients: CriClient[] = [];
    try {
      for (let i = 0; i < connections; i++) {
        // A local subchannel pool: each client has a connection of its own, as separate processes would.
        clients.push(createCriClient(runtime().rt.endpoint, { channelOptions: { 'grpc.use_local_subchannel_pool': 1 } }));
      }
      const results = await Promise.allSettled(clients.map(async (c, i) => {
        const version = await unaryCall(c.runtime, 'Version', {}, { timeoutMs: 60_000 });
        if (i % 10 === 0) await unaryCall(c.runtime, 'ListPodSandbox', {}, { timeoutMs: 60_000 });
        return version.runtime_name;
      }));
      const failed = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
      expect(failed.slice(0, 5), `${failed.length} of ${connections} clients failed`).to.deep.equal([]);
    } finally {
      for (const c of clients) c.close();
    }
    expect((await runtime().call('runtime', 'Version', {}, 10_000)).runtime_name).to.equal('cri-winsim');
  });

  it('keeps answering others while a client does not read a big ListContainers answer', async () => {
    const rt = runtime();
    const { pod_sandbox_id: podId } = await rt.call('runtime', 'RunPodSandbox', { config: pod('slow-reader') });
    const big = 'a'.repeat(512 * 1024);
    for (let i = 0; i < 16; i++) {
      await rt.call('runtime', 'CreateContainer', {
        pod_sandbox_id: podId,
        config: { metadata: { name: `big-${i}` }, image: { image: BUSYBOX }, annotations: { big } },
        sandbox_config: pod('slow-reader'),
      });
    }
    // A raw HTTP/2 client with a 64 KiB window that never reads: the runtime can send 64 KiB of
    // the ~8 MiB answer and must wait. grpc framing: 5-byte prefix, then the (empty) request.
    const session = http2Connect('http://localhost', { createConnection: () => netConnect(rt.rt.socketPath), settings: { initialWindowSize: 65_535 } });
    try {
      session.on('error', () => undefined);
      const stream = session.request({
        [http2Constants.HTTP2_HEADER_METHOD]: 'POST',
        [http2Constants.HTTP2_HEADER_PATH]: '/runtime.v1.RuntimeService/ListContainers',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => undefined);
      stream.pause();
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
      await new Promise((r) => setTimeout(r, 500));
      // Meanwhile everyone else is served.
      const started = Date.now();
      for (let i = 0; i < 20; i++) {
        expect((await rt.call('runtime', 'Version', {}, 5_000)).runtime_name).to.equal('cri-winsim');
        const { containers } = await rt.call('runtime', 'ListContainers', { filter: { pod_sandbox_id: podId, label_selector: { none: 'here' } } }, 5_000);
        expect(containers).to.deep.equal([]);
      }
      expect(Date.now() - started, 'calls while a reader stalls (bounded by their deadlines)').to.be.below(200_000);
    } finally {
      session.destroy();
    }
    // The runtime dropped the stalled stream and answers the same big list to a reading client.
    const { containers } = await rt.call('runtime', 'ListContainers', {}, 30_000);
    expect(containers).to.have.length(16);
  });

  it('answers a ListContainers over 16 MiB with RESOURCE_EXHAUSTED and a message, as containerd does', async () => {
    const rt = runtime();
    const { pod_sandbox_id: podId } = await rt.call('runtime', 'RunPodSandbox', { config: pod('over-limit') });
    const big = 'b'.repeat(1 << 20);
    for (let i = 0; i < 17; i++) {
      await rt.call('runtime', 'CreateContainer', {
        pod_sandbox_id: podId,
        config: { metadata: { name: `huge-${i}` }, image: { image: BUSYBOX }, annotations: { big } },
        sandbox_config: pod('over-limit'),
      });
    }
    const err = await rt.outcome('runtime', 'ListContainers', {}, 30_000);
    expect(err, 'ListContainers over the limit succeeded').to.not.equal(undefined);
    expect(codeName(err!.code)).to.equal('RESOURCE_EXHAUSTED');
    // grpc-js's server text; containerd's grpc-go says "grpc: trying to send message larger than max (N vs. 16777216)".
    expect(err!.details).to.match(/^Sent message larger than max \(\d+ vs\. 16777216\)$/);
    // Smaller answers still work.
    const { containers } = await rt.call('runtime', 'ListContainers', { filter: { label_selector: { none: 'here' } } });
    expect(containers).to.deep.equal([]);
    expect((await rt.call('runtime', 'Version', {})).runtime_name).to.equal('cri-winsim');
  });

  it('stays consistent when deadlines expire in the middle of RunPodSandbox and CreateContainer', async () => {
    const rt = runtime();
    const calls = 40;
    const outcomes = await Promise.allSettled(Array.from({ length: calls }, (_, i) =>
      unaryCall(rt.cri.runtime, 'RunPodSandbox', { config: pod(`deadline-${i}`) }, { timeoutMs: 1 + (i % 8) })));
    const expired = outcomes.filter((o) => o.status === 'rejected');
    for (const o of expired) expect(codeName(((o as PromiseRejectedResult).reason as grpc.ServiceError).code)).to.equal('DEADLINE_EXCEEDED');
    // Give the calls the client gave up on time to finish on the runtime's side: at least a
    // second, and until the list has stayed the same for one (a busy machine can hold a call up
    // longer; the runtime does not tell how many it still runs).
    const { items } = await settledList(() => rt.call('runtime', 'ListPodSandbox', {}));
    // Whatever the client saw, each sandbox is either fully there (ready, with an IP) or not at all.
    for (const item of items as Array<{ id: string; state: number; metadata: { name: string } }>) {
      expect(item.state, `${item.metadata.name} is READY`).to.equal(0);
      const status = await rt.call('runtime', 'PodSandboxStatus', { pod_sandbox_id: item.id });
      expect(status.status.network.ip, `${item.metadata.name} has its IP`).to.match(/^127\./);
    }
    const listed = new Set((items as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name));
    for (let i = 0; i < calls; i++) {
      // A retry of the same sandbox: OK when the first attempt never happened, ALREADY_EXISTS naming
      // the reserved name when it completed (containerd's "is reserved for" answer).
      const err = await rt.outcome('runtime', 'RunPodSandbox', { config: pod(`deadline-${i}`) });
      if (listed.has(`deadline-${i}`)) {
        expect(err === undefined ? 'OK' : codeName(err.code), `retry of deadline-${i}`).to.equal('ALREADY_EXISTS');
        expect(err!.details).to.include(`deadline-${i}_hardening-load_uid-deadline-${i}_0`);
      } else {
        expect(err, `retry of deadline-${i}`).to.equal(undefined);
      }
    }

    // Containers with credential specs, created under expiring deadlines: each one listed has its
    // staged file, and nothing is left once they are removed.
    const { items: pods } = await rt.call('runtime', 'ListPodSandbox', { filter: { label_selector: {} } });
    const target = (pods as Array<{ id: string; metadata: { name: string } }>)[0]!;
    await Promise.allSettled(Array.from({ length: 30 }, (_, i) => unaryCall(rt.cri.runtime, 'CreateContainer', {
      pod_sandbox_id: target.id,
      config: { metadata: { name: `gmsa-${i}` }, image: { image: IIS }, command: ['ping', '-t', 'localhost'], windows: { security_context: { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC } } },
      sandbox_config: pod(target.metadata.name),
    }, { timeoutMs: 1 + (i % 6) })));
    const { containers } = await settledList(() => rt.call('runtime', 'ListContainers', {}));
    expect(await credentialSpecFiles(rt.rt.stateDir), 'one staged file per created container').to.have.length(containers.length);
    await removeEverything(rt);
    expect(await credentialSpecFiles(rt.rt.stateDir)).to.deep.equal([]);
  });
});
