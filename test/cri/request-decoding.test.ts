// The server's request decoding (src/cri/request-decoding.ts): what proto-loader's deserializer
// gives for every request that is UTF-8, and a refusal for a string field that is not, as
// protobuf-go v1.36.6 (internal/impl/codec_field.go) refuses it under containerd's grpc-go server.
import { expect } from 'chai';
import type { MethodDefinition } from '@grpc/grpc-js';
import { imageServiceDefinition, runtimeServiceDefinition } from '../../src/cri/proto.js';
import { invalidRequestStatus, withUtf8CheckedRequests } from '../../src/cri/request-decoding.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';

type Method = MethodDefinition<unknown, unknown>;

describe('server request decoding: proto-loader\'s objects, strings checked for UTF-8', () => {
  const runtime = runtimeServiceDefinition() as unknown as Record<string, Method>;
  const image = imageServiceDefinition() as unknown as Record<string, Method>;
  const checkedRuntime = withUtf8CheckedRequests(runtimeServiceDefinition()) as unknown as Record<string, Method>;
  const checkedImage = withUtf8CheckedRequests(imageServiceDefinition()) as unknown as Record<string, Method>;
  const both = (name: string): [Method, Method] => (name in runtime ? [runtime[name]!, checkedRuntime[name]!] : [image[name]!, checkedImage[name]!]);

  const sandboxConfig = {
    metadata: { name: 'web-äöü-日本', namespace: 'default', uid: 'uid-1', attempt: 2 },
    hostname: 'web',
    log_directory: '/var/log/pods/x',
    dns_config: { servers: ['10.0.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] },
    port_mappings: [{ protocol: 1, container_port: 80, host_port: 8080, host_ip: '127.0.0.1' }],
    labels: { app: 'web', 'emoji-😀': 'ok' },
    annotations: { note: '' },
    windows: { security_context: { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC } },
  };
  const requests: Array<[string, object]> = [
    ['Version', { version: '0.1.0' }],
    ['RunPodSandbox', { config: sandboxConfig, runtime_handler: 'runhcs-wcow-process' }],
    ['CreateContainer', {
      pod_sandbox_id: 'p1',
      config: {
        metadata: { name: 'iis', attempt: 0 },
        image: { image: 'mcr.microsoft.com/windows/servercore/iis', annotations: { a: 'b' } },
        command: ['cmd', '/c'],
        args: ['echo', 'hé'],
        envs: [{ key: 'PATH', value: 'C:\\Windows' }],
        mounts: [{ container_path: 'C:\\data', host_path: 'C:\\host', readonly: true }],
        stdin: true,
        windows: { resources: { cpu_shares: 2, memory_limit_in_bytes: '9223372036854775807' }, security_context: { run_as_username: 'x' } },
      },
      sandbox_config: sandboxConfig,
    }],
    ['StopContainer', { container_id: 'c1', timeout: '-9223372036854775808' }],
    ['ListContainers', { filter: { state: { state: 1 }, label_selector: { app: 'web' } } }],
    ['ExecSync', { container_id: 'c1', cmd: ['whoami', ''], timeout: '5' }],
    ['UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: '127.20.0.0/16' } } }],
    ['PullImage', { image: { image: 'busybox' }, auth: { username: 'u', password: 'p', auth: 'YQ==' } }],
  ];
  for (const [name, request] of requests) {
    it(`${name}: the same object as proto-loader's deserializer`, () => {
      const [plain, checked] = both(name);
      const bytes = plain.requestSerialize(request);
      expect(checked.requestDeserialize(bytes)).to.deep.equal(plain.requestDeserialize(bytes));
      expect(invalidRequestStatus(checked.requestDeserialize(bytes), false)).to.equal(undefined);
    });
  }

  it('every method of both services has a checking deserializer', () => {
    for (const [name, method] of [...Object.entries(checkedRuntime), ...Object.entries(checkedImage)]) {
      expect(method.requestDeserialize, name).to.be.a('function');
      expect(method.requestDeserialize, name).to.not.equal((runtime[name] ?? image[name])!.requestDeserialize);
    }
  });

  it('a string field that is not UTF-8: the marker, answered with grpc-go\'s texts', () => {
    const [plain, checked] = both('ContainerStatus');
    const bytes = Buffer.from([0x0a, 3, 0x61, 0xc3, 0x28]);
    // protobufjs alone: U+FFFD and the request goes on.
    expect(plain.requestDeserialize(bytes)).to.deep.include({ container_id: 'a\ufffd(' });
    const decoded = checked.requestDeserialize(bytes);
    expect(invalidRequestStatus(decoded, false)).to.include({ code: 13, details: 'grpc: error unmarshalling request: string field contains invalid UTF-8' });
    expect(invalidRequestStatus(decoded, true)).to.include({ code: 13, details: 'grpc: failed to unmarshal the received message: string field contains invalid UTF-8' });
  });

  it('an unknown field holding bytes that are not UTF-8 is not checked (protobuf-go keeps unknown fields as they are)', () => {
    const [plain, checked] = both('ContainerStatus');
    // field 99, wire type 2, length 2, ff fe; then container_id (1) = "a".
    const bytes = Buffer.from([0x9a, 0x06, 2, 0xff, 0xfe, 0x0a, 1, 0x61]);
    expect(checked.requestDeserialize(bytes)).to.deep.equal(plain.requestDeserialize(bytes));
    expect(checked.requestDeserialize(bytes)).to.deep.include({ container_id: 'a' });
  });

  it('a string running past the end of the message is refused as malformed, not cut', () => {
    const [, checked] = both('ContainerStatus');
    expect(() => checked.requestDeserialize(Buffer.from([0x0a, 10, 0x61]))).to.throw();
  });
});
