// RuntimeClass → runtime handler (pkg/kubelet/runtimeclass, kuberuntime_sandbox.go, kubernetes
// v1.34), imagePullSecrets → PullImage auth (pkg/credentialprovider keyring.go, secrets.go,
// kuberuntime_image.go, kubelet_pods.go getPullSecretsForPod), and Go's encoding/json syntax
// errors (scanner.go) where the kubelet and the webhook parse JSON.
import { expect } from 'chai';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import { runPodOnce } from '../../src/kubelet/pod-worker.js';
import { type PodWorkerOptions } from '../../src/kubelet/pod-worker-options.js';
import { DockerKeyring, imageRepository } from '../../src/kubelet/image-pull-credentials.js';
import { goJsonSyntaxError } from '../../src/apiserver/go-json-errors.js';
import { admitPod, compareCredSpecContents } from '../../src/apiserver/admission.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { snapshotFromDocuments } from '../../src/apiserver/cluster.js';
import { snapshotPodObjects } from '../../src/kubelet/pod-objects.js';
import { useScriptedRuntime } from './support/scripted-runtime.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const dockerConfigJson = (name: string, auths: Record<string, object>, namespace = 'apps'): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
});

describe('docker keyring (pkg/credentialprovider v1.34)', () => {
  const keyring = DockerKeyring.fromSecrets([
    dockerConfigJson('a', {
      'https://private.example.com/v1/': { username: 'host-wide', password: 'p1' },
      'private.example.com/team': { auth: b64('robot:hunter2') },
      '*.azurecr.io': { username: 'acr', password: 'p2' },
      'registry.local:5000': { username: 'ported', password: 'p3' },
      'https://index.docker.io/v1/': { username: 'hub', password: 'p4' },
    }),
    { metadata: { name: 'b' }, type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(JSON.stringify({ 'quay.io': { username: 'quay', password: 'p5' } })) } },
    // Another type is not a pull secret, whatever its keys.
    { metadata: { name: 'c' }, type: 'Opaque', data: { '.dockerconfigjson': b64(JSON.stringify({ auths: { 'ghcr.io': { username: 'x', password: 'y' } } })) } },
  ]);
  const users = (image: string): string[] => keyring.lookup(image).map((a) => a.username);
  const table: [string, string, string[]][] = [
    ['the more specific path first, then the host', 'private.example.com/team/app:1', ['robot', 'host-wide']],
    ['a path that is not a prefix does not match', 'private.example.com/other/app', ['host-wide']],
    ['a glob host part', 'contoso.azurecr.io/webapp:1.0', ['acr']],
    ['a glob matches one part only', 'a.b.azurecr.io/webapp', []],
    ['the port must agree', 'registry.local:5000/app', ['ported']],
    ['no port is not port 5000', 'registry.local/app', []],
    ['.dockercfg secrets', 'quay.io/coreos/etcd', ['quay']],
    ['Docker Hub short names use index.docker.io', 'busybox:1.36', ['hub']],
    ['Docker Hub user images too', 'library/nginx', ['hub']],
    ['an Opaque secret is no pull secret', 'ghcr.io/org/app', []],
  ];
  for (const [name, image, expected] of table) it(`${name}: ${image}`, () => expect(users(image)).to.deep.equal(expected));

  it('auth (base64 user:password) gives both fields', () => {
    expect(keyring.lookup('private.example.com/team/app')[0]).to.deep.equal({ username: 'robot', password: 'hunter2' });
  });

  it('repositories as parsers.ParseImageName normalises them', () => {
    expect(imageRepository('busybox')).to.equal('docker.io/library/busybox');
    expect(imageRepository('user/app:1')).to.equal('docker.io/user/app');
    expect(imageRepository('localhost:5000/app@sha256:abc')).to.equal('localhost:5000/app');
    expect(imageRepository('mcr.microsoft.com/windows/nanoserver:ltsc2022')).to.equal('mcr.microsoft.com/windows/nanoserver');
  });

  it('a pull secret that is not JSON fails with Go\'s error text', () => {
    const broken: V1Secret = { metadata: { name: 'x' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{"auths": {') } };
    expect(() => DockerKeyring.fromSecrets([broken])).to.throw('unexpected end of JSON input');
  });
});

describe("Go's encoding/json syntax errors (scanner.go)", () => {
  const table: [string, string | undefined][] = [
    ['{"a": [1, 2.5e3, true, null, "x\\u00e9"]}', undefined],
    ['', 'unexpected end of JSON input'],
    ['   ', 'unexpected end of JSON input'],
    ['{"a":', 'unexpected end of JSON input'],
    ['xyz', "invalid character 'x' looking for beginning of value"],
    ['{"a": 1} x', "invalid character 'x' after top-level value"],
    ["{'a': 1}", "invalid character '\\'' looking for beginning of object key string"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a": 1 "b": 2}', `invalid character '"' after object key:value pair`],
    ['[1 2]', "invalid character '2' after array element"],
    ['"a\nb"', "invalid character '\\n' in string literal"],
    ['"\\x"', "invalid character 'x' in string escape code"],
    ['-x', "invalid character 'x' in numeric literal"],
    ['1.x', "invalid character 'x' after decimal point in numeric literal"],
    ['1ex', "invalid character 'x' in exponent of numeric literal"],
    ['01', "invalid character '1' after top-level value"],
    ['trux', "invalid character 'x' in literal true (expecting 'e')"],
    ['"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"],
  ];
  for (const [input, expected] of table) it(JSON.stringify(input), () => expect(goJsonSyntaxError(input)).to.equal(expected));

  it('the webhook\'s credspec comparison reports Go\'s text (windows-gmsa webhook.go compareCredSpecContents)', () => {
    expect(compareCredSpecContents('{"a":', '{"a":1}').error).to.equal('unable to parse "{\\"a\\":" as a JSON object: unexpected end of JSON input');
    expect(compareCredSpecContents('{"a":1}', 'nope').error).to.equal(`unable to parse CRD "nope" as a JSON object: invalid character 'o' in literal null (expecting 'u')`);
  });
});

describe('RuntimeClass and imagePullSecrets through the pod worker', () => {
  const fx = useScriptedRuntime('winsim-rc-');
  const cluster = snapshotFromDocuments([
    { source: { file: 'c.yaml', document: 1 }, value: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'hyperv' }, handler: 'runhcs-wcow-hypervisor' } },
    { source: { file: 'c.yaml', document: 2 }, value: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'broken' }, handler: 'missing-handler' } },
    { source: { file: 'c.yaml', document: 3 }, value: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } } },
    { source: { file: 'c.yaml', document: 4 }, value: { ...dockerConfigJson('regcred', { 'private.example.com': { username: 'robot', password: 'hunter2' } }) } },
  ]);
  const options = (): PodWorkerOptions => ({ podLogsRoot: join(fx.dir, 'pods'), pollIntervalMs: 5, callTimeoutMs: 5000, ...snapshotPodObjects(cluster) });
  const container = (image = 'nano:ltsc2022'): V1Container => ({ name: 'a', image });
  const pod = (spec: Partial<V1Pod['spec']> = {}): V1Pod => ({ metadata: { name: 'web', namespace: 'apps', uid: 'uid-1' }, spec: { containers: [container()], ...spec } });

  // plugin/pkg/admission/runtimeclass/admission.go v1.34, as `kubelet run` runs the API server's plugins.
  it("the API server's RuntimeClass plugin: a missing class is forbidden; podFixed becomes the overhead", () => {
    const withOverhead = snapshotFromDocuments([
      { source: { file: 'c.yaml', document: 1 }, value: { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'hyperv' }, handler: 'runhcs-wcow-hypervisor', overhead: { podFixed: { cpu: '250m', memory: '120Mi' } } } },
      { source: { file: 'c.yaml', document: 2 }, value: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } } },
    ]);
    const context = { cluster: withOverhead, user: requestingUser('alice') };
    const missing = admitPod(pod({ runtimeClassName: 'gvisor' }), context);
    expect(missing.allowed ? '' : `${missing.error.code} ${missing.error.message}`).to.equal('403 pods "web" is forbidden: pod rejected: RuntimeClass "gvisor" not found');
    const admitted = admitPod(pod({ runtimeClassName: 'hyperv' }), context);
    expect(admitted.allowed ? admitted.pod.spec?.overhead : undefined).to.deep.equal({ cpu: '250m', memory: '120Mi' });
    const same = admitPod(pod({ runtimeClassName: 'hyperv', overhead: { cpu: '0.25', memory: '120Mi' } }), context);
    expect(same.allowed).to.equal(true);
    const other = admitPod(pod({ runtimeClassName: 'hyperv', overhead: { cpu: '1' } }), context);
    expect(other.allowed ? '' : other.error.message).to.equal(`pods "web" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`);
  });

  it('sends the RuntimeClass handler as runtime_handler; none without a runtimeClassName', async () => {
    await runPodOnce(fx.cri, pod({ runtimeClassName: 'hyperv' }), options());
    await runPodOnce(fx.cri, pod(), options());
    expect(fx.runtime.sandboxHandlers).to.deep.equal(['runhcs-wcow-hypervisor', '']);
  });

  it('an unknown RuntimeClass fails the sandbox with the lister\'s NotFound text; the runtime is not asked', async () => {
    const outcome = await runPodOnce(fx.cri, pod({ runtimeClassName: 'gvisor' }), options());
    expect(outcome.sandboxError).to.deep.equal({ reason: 'FailedCreatePodSandBox', message: 'Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found' });
    expect(outcome.events).to.deep.include({ type: 'Warning', reason: 'FailedCreatePodSandBox', message: 'Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found' });
    expect(fx.runtime.calls).to.not.include('RunPodSandbox');
  });

  it("a handler the runtime does not have gets the runtime's text through", async () => {
    const outcome = await runPodOnce(fx.cri, pod({ runtimeClassName: 'broken' }), options());
    expect(outcome.sandboxError?.message).to.equal('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "missing-handler" is configured');
  });

  it('pulls with the matching pull secret as PullImage auth', async () => {
    const outcome = await runPodOnce(fx.cri, pod({ containers: [container('private.example.com/team/app:1')], imagePullSecrets: [{ name: 'regcred' }] }), options());
    expect(outcome.containers[0]).to.deep.include({ state: 'started' });
    expect(fx.runtime.pullAuths).to.deep.equal([{ username: 'robot', password: true }]);
  });

  it('without the secret: anonymous pull, ErrImagePull with the runtime text, and the missing secret named', async () => {
    const outcome = await runPodOnce(fx.cri, pod({ containers: [container('private.example.com/team/app:1')], imagePullSecrets: [{ name: 'nope' }] }), options());
    expect(fx.runtime.pullAuths).to.deep.equal([null]);
    expect(outcome.containers[0]).to.deep.include({
      state: 'waiting',
      reason: 'ErrImagePull',
      message: 'Failed to pull image "private.example.com/team/app:1": rpc error: code = Unknown desc = failed to pull and unpack image "private.example.com/team/app:1": 401 Unauthorized',
    });
    expect(outcome.events).to.deep.include({ type: 'Warning', reason: 'FailedToRetrieveImagePullSecret', message: 'Unable to retrieve some image pull secrets (nope); attempting to pull the image may not succeed.' });
  });
});
