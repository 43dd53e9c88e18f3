// Extreme but well-formed requests over the socket, each with the answer it must get: huge ids
// and names, thousands of labels, extreme int64 values, unknown enum values, credential specs that
// are deeply nested or huge JSON, and bytes that are not UTF-8 inside a string field (refused as
// containerd's grpc-go server refuses them). The runtime
// answers each one promptly (a deadline on every call), stays healthy, and leaves no credential
// spec file behind.
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { MAX_STATUS_MESSAGE_LENGTH, statusError } from '../../src/cri/status.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';
import {
  BUSYBOX,
  IIS,
  codeName,
  crashLines,
  credentialSpecFiles,
  removeEverything,
  startHardeningRuntime,
  unclearStatus,
  type HardeningRuntime,
} from './support.js';

const MIB = 1 << 20;

describe('hardening: extreme requests get prompt, clear answers', function () {
  this.timeout(120_000);
  let h: HardeningRuntime | undefined;
  let podId = '';
  const runtime = (): HardeningRuntime => {
    if (h === undefined) throw new Error('no runtime (see the before all hook)');
    return h;
  };
  const pod = (name: string, extra: object = {}) => ({ metadata: { name, namespace: 'hardening', uid: `uid-${name}`, attempt: 0 }, ...extra });

  before(async () => {
    h = await startHardeningRuntime('hardening-extremes');
    await h.call('image', 'PullImage', { image: { image: BUSYBOX } });
    await h.call('image', 'PullImage', { image: { image: IIS } });
    podId = (await h.call('runtime', 'RunPodSandbox', { config: pod('base') })).pod_sandbox_id;
  });

  after(async () => {
    const left = h === undefined ? [] : crashLines(h.rt.output());
    if (h !== undefined) {
      await removeEverything(h);
      expect(await credentialSpecFiles(h.rt.stateDir), 'credential spec files at the end').to.deep.equal([]);
    }
    await h?.stop();
    expect(left, 'exceptions in the runtime output').to.deep.equal([]);
  });

  /** The call's error; fails when it succeeded or did not answer within 5 s. */
  async function refused(method: string, request: object): Promise<grpc.ServiceError> {
    const err = await runtime().outcome(method === 'ImageStatus' ? 'image' : 'runtime', method, request, 5_000);
    expect(err, `${method} succeeded`).to.not.equal(undefined);
    expect(err!.details, `${method} answered`).to.not.match(/^Deadline exceeded/);
    expect(unclearStatus(err), method).to.equal(undefined);
    return err!;
  }

  describe('an id of 1 MiB', () => {
    // Before the fix the NOT_FOUND message quoted the whole id, grpc-js put it in the trailers and
    // the client never received them: every call hung until its deadline.
    for (const [method, field] of [
      ['PodSandboxStatus', 'pod_sandbox_id'],
      ['ContainerStatus', 'container_id'],
      ['StartContainer', 'container_id'],
      ['ContainerStats', 'container_id'],
      ['UpdateContainerResources', 'container_id'],
      ['PortForward', 'pod_sandbox_id'],
    ] as const) {
      it(`${method}: NOT_FOUND with the message cut to ${MAX_STATUS_MESSAGE_LENGTH} characters, not a hang`, async () => {
        const err = await refused(method, { [field]: 'é'.repeat(MIB), cmd: ['echo'] });
        expect(codeName(err.code)).to.equal('NOT_FOUND');
        expect(err.details).to.match(/… \(message cut: \d+ more characters\)$/);
        expect(err.details.length).to.be.below(MAX_STATUS_MESSAGE_LENGTH + 60);
      });
    }

    it('cuts a message of emoji between surrogate pairs, never inside one', () => {
      const { details } = statusError(grpc.status.NOT_FOUND, `container "${'\u{1F600}'.repeat(3000)}" not found`);
      const kept = details.slice(0, details.indexOf('…'));
      expect(kept.length).to.be.at.most(MAX_STATUS_MESSAGE_LENGTH);
      expect(() => encodeURI(kept), 'no lone surrogate left').to.not.throw();
      expect(details).to.match(/… \(message cut: \d+ more characters\)$/);
      expect(statusError(grpc.status.NOT_FOUND, 'short').details).to.equal('short');
    });

    it('ExecSync: NOT_FOUND with a cut message', async () => {
      const err = await refused('ExecSync', { container_id: 'x'.repeat(MIB), cmd: ['echo'], timeout: '1' });
      expect(codeName(err.code)).to.equal('NOT_FOUND');
      expect(err.details).to.include('message cut');
    });
  });

  it('RunPodSandbox with 5,000 labels and annotations succeeds, and ListPodSandbox returns them all', async () => {
    const labels = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`hardening.example/l-${i}`, `v${i}`]));
    const id = (await runtime().call('runtime', 'RunPodSandbox', { config: pod('many-labels', { labels, annotations: labels }) }, 10_000)).pod_sandbox_id;
    const { items } = await runtime().call('runtime', 'ListPodSandbox', { filter: { id } });
    expect(Object.keys(items[0].labels)).to.have.length(5000);
    expect(Object.keys(items[0].annotations)).to.have.length(5000);
  });

  it('StopContainer with timeout -2^63 answers INVALID_ARGUMENT naming timeout', async () => {
    const err = await refused('StopContainer', { container_id: 'f00d', timeout: '-9223372036854775808' });
    expect(codeName(err.code)).to.equal('INVALID_ARGUMENT');
    expect(err.details).to.equal('timeout must not be negative, got -9223372036854775808');
  });

  it('ListContainers with an unknown state value lists nothing (no state matches), as containerd', async () => {
    for (const state of [99, -1, 2147483647]) {
      const { containers } = await runtime().call('runtime', 'ListContainers', { filter: { state: { state } } });
      expect(containers, `state ${state}`).to.deep.equal([]);
    }
  });

  describe('credential specs', () => {
    const create = (name: string, credentialSpec: string) => runtime().call('runtime', 'CreateContainer', {
      pod_sandbox_id: podId,
      config: { metadata: { name }, image: { image: IIS }, command: ['ping', '-t', 'localhost'], windows: { security_context: { credential_spec: credentialSpec } } },
      sandbox_config: pod('base'),
    }, 10_000);

    const cases: Array<[string, string, RegExp]> = [
      ['20,000 nested arrays', `${'['.repeat(20000)}${']'.repeat(20000)}`, /^invalid credential spec: the document must be an object, not an array \(cri-winsim schema check\)$/],
      ['3,000 nested objects', `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`, /^invalid credential spec: CmsPlugins is required \(cri-winsim schema check\)$/],
      ['10 MB of JSON', JSON.stringify({ Big: 'x'.repeat(10_000_000) }), /^invalid credential spec: size must be under 64 KiB \(got \d+ bytes\) \(cri-winsim schema check\)$/],
      ['an unterminated string', '"abc', /^invalid credential spec: not valid JSON: /],
    ];
    for (const [what, spec, message] of cases) {
      it(`${what}: the start is refused with a clear message and the staged file is gone`, async () => {
        const { container_id: id } = await create(`spec-${cases.findIndex((c) => c[0] === what)}`, spec);
        const err = await refused('StartContainer', { container_id: id });
        expect(err.details).to.match(message);
        const status = await runtime().call('runtime', 'ContainerStatus', { container_id: id });
        expect(status.status.state, 'a failed start leaves the container EXITED').to.equal(2);
        expect(status.status.reason).to.equal('StartError');
        await runtime().call('runtime', 'RemoveContainer', { container_id: id });
        expect(await credentialSpecFiles(runtime().rt.stateDir)).to.deep.equal([]);
      });
    }
  });

  it('the KEP example with 3,000 nested objects in a member it does not know starts, and verbose ContainerStatus answers', async () => {
    const spec = `${KEP_EXAMPLE_CREDENTIAL_SPEC.trimEnd().slice(0, -1)},"Extra":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`;
    const { container_id: id } = await runtime().call('runtime', 'CreateContainer', {
      pod_sandbox_id: podId,
      config: { metadata: { name: 'deep-extra' }, image: { image: IIS }, command: ['ping', '-t', 'localhost'], windows: { security_context: { run_as_username: 'ContainerUser', credential_spec: spec } } },
      sandbox_config: pod('base'),
    }, 10_000);
    await runtime().call('runtime', 'StartContainer', { container_id: id }, 10_000);
    expect(await credentialSpecFiles(runtime().rt.stateDir), 'the staged file is gone after the start').to.deep.equal([]);
    const status = await runtime().call('runtime', 'ContainerStatus', { container_id: id, verbose: true }, 5_000);
    expect(status.status.state).to.equal(1);
    expect(JSON.parse(status.info.info as string)).to.be.an('object');
    await runtime().call('runtime', 'RemoveContainer', { container_id: id });
  });

  // containerd's server (grpc-go v1.72.1 server.go over protobuf-go v1.36.6 internal/impl/
  // codec_field.go) refuses a request whose string field is not UTF-8 before any handler runs:
  // INTERNAL "grpc: error unmarshalling request: string field contains invalid UTF-8"; a server
  // stream's request: "grpc: failed to unmarshal the received message: …" (rpc_util.go recv).
  describe('bytes that are not UTF-8 in a string field', () => {
    const UNARY = 'grpc: error unmarshalling request: string field contains invalid UTF-8';
    const STREAM = 'grpc: failed to unmarshal the received message: string field contains invalid UTF-8';
    /** A length-delimited field: tag (field number, wire type 2), length, bytes. */
    const field = (n: number, ...parts: Buffer[]): Buffer => {
      const body = Buffer.concat(parts);
      if (body.length > 127) throw new Error('the test fields are short');
      return Buffer.concat([Buffer.from([(n << 3) | 2, body.length]), body]);
    };
    const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0xc0]);
    const send = async (path: string, bytes: Buffer): Promise<grpc.ServiceError | undefined> => {
      const raw = new grpc.Client(runtime().rt.endpoint, grpc.credentials.createInsecure());
      try {
        return await new Promise<grpc.ServiceError | undefined>((resolve) => {
          raw.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, { deadline: Date.now() + 5_000 }, (e) => resolve(e ?? undefined));
        });
      } finally {
        raw.close();
      }
    };
    const cases: Array<[string, string, Buffer]> = [
      // ContainerStatusRequest { container_id (1) }
      ['a top-level string (ContainerStatus.container_id)', 'RuntimeService/ContainerStatus', field(1, NOT_UTF8)],
      // RunPodSandboxRequest { config (1) { metadata (1) { name (1) }, labels (6) { key (1), value (2) } } }
      ['a map value in a nested message (RunPodSandbox config.labels)', 'RuntimeService/RunPodSandbox', field(1, field(1, field(1, Buffer.from('utf8'))), field(6, field(1, Buffer.from('app')), field(2, NOT_UTF8)))],
      // ExecSyncRequest { container_id (1), cmd (2) repeated }
      ['one element of a repeated string (ExecSync.cmd)', 'RuntimeService/ExecSync', Buffer.concat([field(1, Buffer.from('abc')), field(2, Buffer.from('echo')), field(2, Buffer.from([0xed, 0xa0, 0x80]))])],
      // PullImageRequest { image (1) { image (1) } }: a UTF-8 overlong encoding of '/'
      ['an overlong encoding (PullImage image.image)', 'ImageService/PullImage', field(1, field(1, Buffer.from([0xc0, 0xaf])))],
      // CheckpointContainerRequest { container_id (1) }: decoded before the handler says Unimplemented
      ['an RPC the runtime does not offer (CheckpointContainer)', 'RuntimeService/CheckpointContainer', field(1, NOT_UTF8)],
    ];
    for (const [what, rpc, bytes] of cases) {
      it(`in ${what}: INTERNAL with grpc-go's text, and nothing is created`, async () => {
        const before = await runtime().call('runtime', 'ListPodSandbox', {});
        const err = await send(`/runtime.v1.${rpc}`, bytes);
        expect(codeName(err!.code)).to.equal('INTERNAL');
        expect(err!.details).to.equal(UNARY);
        expect((await runtime().call('runtime', 'ListPodSandbox', {})).items).to.deep.equal(before.items);
      });
    }

    it('in a server stream\'s request (StreamContainers filter.id): INTERNAL with the stream text', async () => {
      const raw = new grpc.Client(runtime().rt.endpoint, grpc.credentials.createInsecure());
      try {
        // StreamContainersRequest { filter (1) { id (1) } }
        const stream = raw.makeServerStreamRequest('/runtime.v1.RuntimeService/StreamContainers', (b: Buffer) => b, (b: Buffer) => b, field(1, field(1, NOT_UTF8)), { deadline: Date.now() + 5_000 });
        const err = await new Promise<grpc.ServiceError | undefined>((resolve) => {
          stream.on('error', (e: grpc.ServiceError) => resolve(e));
          stream.on('end', () => resolve(undefined));
          stream.on('data', () => undefined);
        });
        expect(codeName(err!.code)).to.equal('INTERNAL');
        expect(err!.details).to.equal(STREAM);
      } finally {
        raw.close();
      }
    });

    it('valid UTF-8 beyond ASCII decodes as before: the answer names it', async () => {
      const id = 'ünïcödé-日本-😀';
      const err = await send('/runtime.v1.RuntimeService/ContainerStatus', field(1, Buffer.from(id, 'utf8')));
      expect(codeName(err!.code)).to.equal('NOT_FOUND');
      expect(err!.details).to.equal(`container "${id}" not found`);
    });
  });

  it('still answers Version', async () => {
    expect((await runtime().call('runtime', 'Version', {}, 5_000)).runtime_name).to.equal('cri-winsim');
  });
});
