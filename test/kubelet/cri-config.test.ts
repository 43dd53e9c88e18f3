import { expect } from 'chai';
import { join } from 'node:path';
import type { V1ConfigMap, V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { buildContainerConfig, buildPodSandboxConfig, expand, parseQuantity, podHostname } from '../../src/kubelet/cri-config.js';
import { KubeletConfigError } from '../../src/kubelet/security-context.js';

const spec = '{"CmsPlugins":["ActiveDirectory"]}';
const basePod = (): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'uid-1', labels: { app: 'web' }, annotations: { note: 'x' } },
  spec: {
    serviceAccountName: 'webapp',
    securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: spec, runAsUserName: 'ContainerUser' } },
    containers: [
      {
        name: 'iis',
        image: 'mcr.microsoft.com/windows/servercore/iis',
        command: ['cmd', '/c'],
        args: ['echo $(GREETING) from $(POD_NAME) costs $$5 $(UNDEFINED)'],
        workingDir: 'C:\\inetpub',
        env: [
          { name: 'GREETING', value: 'hello' },
          { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'DOMAIN', valueFrom: { configMapKeyRef: { name: 'settings', key: 'domain' } } },
          { name: 'FULL', value: '$(GREETING)@$(DOMAIN)' },
        ],
        ports: [{ containerPort: 80, hostPort: 8080 }],
        resources: { limits: { cpu: '500m', memory: '256Mi' } },
      },
    ],
  },
});
const settings: V1ConfigMap[] = [{ metadata: { name: 'settings', namespace: 'apps' }, data: { domain: 'contoso.com' } }];

describe('PodSandboxConfig (generatePodSandboxConfig)', () => {
  it('carries metadata, hostname, log directory under the given root, labels, annotations and the Windows context', () => {
    const config = buildPodSandboxConfig(basePod(), { podLogsRoot: '/tmp/pods', attempt: 1 });
    expect(config).to.deep.equal({
      metadata: { name: 'web', namespace: 'apps', uid: 'uid-1', attempt: 1 },
      hostname: 'web',
      log_directory: join('/tmp/pods', 'apps_web_uid-1'),
      labels: { app: 'web', 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': 'apps', 'io.kubernetes.pod.uid': 'uid-1' },
      annotations: { note: 'x' },
      port_mappings: [{ protocol: 0, container_port: 80, host_port: 8080, host_ip: '' }],
      // kuberuntime_sandbox.go generatePodSandboxConfig (kubernetes v1.34.12) sends the Linux half
      // on Windows too: namespaces from NamespacesForPod (kuberuntime/util/util.go), seccomp
      // RuntimeDefault, no cgroup parent; the Windows half has no namespace_options.
      linux: {
        cgroup_parent: '',
        security_context: { privileged: false, seccomp: { profile_type: 'RuntimeDefault' }, namespace_options: { ipc: 0, network: 0, pid: 1 } },
        sysctls: {},
      },
      windows: { security_context: { run_as_username: 'ContainerUser', credential_spec: spec, host_process: false } },
    });
  });

  // NamespacesForPod (pkg/kubelet/kuberuntime/util/util.go, kubernetes v1.34.12): NODE for each
  // host namespace, pid POD with shareProcessNamespace, else CONTAINER; no userns on Windows.
  const namespaceCases: { name: string; spec: Partial<V1PodSpec>; expected: { ipc: number; network: number; pid: number } }[] = [
    { name: 'defaults', spec: {}, expected: { ipc: 0, network: 0, pid: 1 } },
    { name: 'hostNetwork', spec: { hostNetwork: true }, expected: { ipc: 0, network: 2, pid: 1 } },
    { name: 'hostPID', spec: { hostPID: true }, expected: { ipc: 0, network: 0, pid: 2 } },
    { name: 'hostIPC', spec: { hostIPC: true }, expected: { ipc: 2, network: 0, pid: 1 } },
    { name: 'shareProcessNamespace', spec: { shareProcessNamespace: true }, expected: { ipc: 0, network: 0, pid: 0 } },
  ];
  for (const c of namespaceCases) {
    it(`namespace_options as NamespacesForPod sets them: ${c.name}`, () => {
      const pod = basePod();
      Object.assign(pod.spec!, c.spec);
      if (pod.spec!.hostNetwork === true) pod.spec!.containers[0]!.ports = [];
      expect(buildPodSandboxConfig(pod, { podLogsRoot: '/tmp' }).linux?.security_context?.namespace_options).to.deep.equal(c.expected);
    });
  }

  it('sends no hostname for a host-network pod', () => {
    const pod = basePod();
    pod.spec!.hostNetwork = true;
    expect(buildPodSandboxConfig(pod, { podLogsRoot: '/tmp' })).not.to.have.property('hostname');
  });

  it('uses spec.hostname, and cuts long pod names to a DNS label', () => {
    expect(podHostname({ metadata: { name: 'web' }, spec: { hostname: 'iis01', containers: [] } })).to.equal('iis01');
    expect(podHostname({ metadata: { name: `${'a'.repeat(62)}-b` } })).to.equal('a'.repeat(62));
  });

  it('refuses HostProcess pods without hostNetwork', () => {
    const pod = basePod();
    pod.spec!.securityContext!.windowsOptions!.hostProcess = true;
    expect(() => buildPodSandboxConfig(pod, { podLogsRoot: '/tmp' })).to.throw(KubeletConfigError, 'hostNetwork is required if Pod contains HostProcess containers');
  });
});

describe('ContainerConfig (generateContainerConfig)', () => {
  it('carries metadata, image, expanded command and args, env, log path, labels and the Windows context', () => {
    const pod = basePod();
    const config = buildContainerConfig(pod, pod.spec!.containers[0]!, { attempt: 2, configMaps: settings, nodeCpuCount: 4 });
    expect(config.metadata).to.deep.equal({ name: 'iis', attempt: 2 });
    expect(config.image).to.deep.include({ image: 'mcr.microsoft.com/windows/servercore/iis' });
    expect(config.command).to.deep.equal(['cmd', '/c']);
    expect(config.args).to.deep.equal(['echo hello from web costs $5 $(UNDEFINED)']);
    expect(config.working_dir).to.equal('C:\\inetpub');
    expect(config.envs).to.deep.equal([
      { key: 'GREETING', value: 'hello' },
      { key: 'POD_NAME', value: 'web' },
      { key: 'DOMAIN', value: 'contoso.com' },
      { key: 'FULL', value: 'hello@contoso.com' },
    ]);
    expect(config.log_path).to.equal(join('iis', '2.log'));
    expect(config.labels).to.deep.equal({
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'apps',
      'io.kubernetes.pod.uid': 'uid-1',
      'io.kubernetes.container.name': 'iis',
    });
    expect(config.annotations).to.include({ 'io.kubernetes.container.restartCount': '2', 'io.kubernetes.container.terminationMessagePath': '/dev/termination-log' });
    expect(config.windows).to.deep.equal({
      resources: { cpu_maximum: '1250', memory_limit_in_bytes: String(256 * 1024 * 1024) },
      security_context: { run_as_username: 'ContainerUser', credential_spec: spec, host_process: false },
    });
  });

  // generateWindowsContainerConfig (pkg/kubelet/kuberuntime/kuberuntime_container_windows.go,
  // kubernetes v1.34.12): run_as_username starts as the image's user (getImageUser) and the
  // effective runAsUserName replaces it.
  it("sends the image's user as run_as_username when the pod sets no runAsUserName", () => {
    const pod = basePod();
    delete pod.spec!.securityContext!.windowsOptions!.runAsUserName;
    const config = buildContainerConfig(pod, pod.spec!.containers[0]!, { configMaps: settings, imageUser: 'ContainerUser' });
    expect(config.windows?.security_context?.run_as_username).to.equal('ContainerUser');
    expect(buildContainerConfig(pod, pod.spec!.containers[0]!, { configMaps: settings }).windows?.security_context?.run_as_username).to.equal('');
  });

  it("lets runAsUserName replace the image's user", () => {
    const pod = basePod();
    const config = buildContainerConfig(pod, pod.spec!.containers[0]!, { configMaps: settings, imageUser: 'ContainerAdministrator' });
    expect(config.windows?.security_context?.run_as_username).to.equal('ContainerUser');
  });

  const refusals: { name: string; change: (c: V1Container, p: V1Pod) => void; message: string }[] = [
    { name: 'a ConfigMap that does not exist', change: (c) => (c.env = [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k' } } }]), message: 'configmap "missing" not found' },
    { name: 'a missing key', change: (c) => (c.env = [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'settings', key: 'nope' } } }]), message: "couldn't find key nope in ConfigMap apps/settings" },
    {
      name: 'runAsNonRoot with ContainerAdministrator',
      change: (_c, p) => {
        p.spec!.securityContext!.runAsNonRoot = true;
        p.spec!.securityContext!.windowsOptions!.runAsUserName = 'containeradministrator';
      },
      message: `container's runAsUserName (containeradministrator) which will be regarded as root identity and will break non-root policy (pod: "web_apps(uid-1)", container: iis)`,
    },
  ];
  for (const r of refusals) {
    it(`refuses ${r.name} (CreateContainerConfigError)`, () => {
      const pod = basePod();
      r.change(pod.spec!.containers[0]!, pod);
      expect(() => buildContainerConfig(pod, pod.spec!.containers[0]!, { configMaps: settings })).to.throw(KubeletConfigError, r.message);
    });
  }

  it('an optional ConfigMap that is missing gives an empty value', () => {
    const pod = basePod();
    pod.spec!.containers[0]!.env = [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k', optional: true } } }];
    expect(buildContainerConfig(pod, pod.spec!.containers[0]!).envs).to.deep.equal([{ key: 'X', value: '' }]);
  });
});

describe('helpers', () => {
  const quantities: [string, number][] = [
    ['500m', 0.5],
    ['2', 2],
    ['256Mi', 268435456],
    ['1G', 1e9],
    ['1e3', 1000],
  ];
  for (const [text, value] of quantities) it(`quantity ${text} is ${value}`, () => expect(parseQuantity(text, 'x')).to.equal(value));
  it('refuses a malformed quantity', () => expect(() => parseQuantity('lots', 'resources.limits.cpu')).to.throw(KubeletConfigError, 'resources.limits.cpu: quantities must match'));
  it('expansion leaves an unterminated reference as written', () => expect(expand('a $(B', () => 'x')).to.equal('a $(B'));
});
