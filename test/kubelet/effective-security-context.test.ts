import { expect } from 'chai';
import type { V1Container, V1Pod, V1PodSecurityContext, V1SecurityContext, V1WindowsSecurityContextOptions } from '@kubernetes/client-node';
import {
  containerWindowsSecurityContext,
  determineEffectiveSecurityContext,
  KubeletConfigError,
  sandboxWindowsSecurityContext,
  verifyRunAsNonRoot,
} from '../../src/kubelet/security-context.js';

const pod = (podSc: V1PodSecurityContext | undefined, containers: V1Container[], extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'default', uid: 'u-1' },
  spec: { containers, ...(podSc === undefined ? {} : { securityContext: podSc }), ...extra },
});
const container = (sc?: V1SecurityContext, name = 'app'): V1Container => ({ name, image: 'img', ...(sc === undefined ? {} : { securityContext: sc }) });
const win = (o: V1WindowsSecurityContextOptions) => ({ windowsOptions: o });

describe('effective security context (pkg/securitycontext DetermineEffectiveSecurityContext)', () => {
  const cases: { name: string; pod?: V1PodSecurityContext; container?: V1SecurityContext; expected: V1SecurityContext | undefined }[] = [
    { name: 'neither pod nor container context: none', expected: undefined },
    { name: 'only the container context: it is used as is', container: win({ runAsUserName: 'ContainerUser' }), expected: win({ runAsUserName: 'ContainerUser' }) },
    { name: 'only the pod context: windowsOptions and runAsNonRoot carry over', pod: { runAsNonRoot: true, ...win({ runAsUserName: 'ContainerUser' }) }, expected: { runAsNonRoot: true, ...win({ runAsUserName: 'ContainerUser' }) } },
    {
      name: 'container runAsUserName overrides the pod one, the pod gMSA stays',
      pod: win({ runAsUserName: 'ContainerUser', gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}' }),
      container: win({ runAsUserName: 'ContainerAdministrator' }),
      expected: win({ runAsUserName: 'ContainerAdministrator', gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}' }),
    },
    {
      name: 'container gMSA name and spec replace the pod pair',
      pod: win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}' }),
      container: win({ gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: '{"b":2}' }),
      expected: win({ gmsaCredentialSpecName: 'logger', gmsaCredentialSpec: '{"b":2}' }),
    },
    {
      name: 'a container naming only a spec drops the pod inlined spec (the pair moves together)',
      pod: win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}', runAsUserName: 'ContainerUser' }),
      container: win({ gmsaCredentialSpecName: 'logger' }),
      expected: win({ gmsaCredentialSpecName: 'logger', runAsUserName: 'ContainerUser' }),
    },
    {
      name: 'a container setting only contents drops the pod name',
      pod: win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}' }),
      container: win({ gmsaCredentialSpec: '{"b":2}' }),
      expected: win({ gmsaCredentialSpec: '{"b":2}' }),
    },
    {
      name: 'hostProcess overrides independently of runAsUserName',
      pod: win({ hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' }),
      container: win({ hostProcess: false }),
      expected: win({ hostProcess: false, runAsUserName: 'NT AUTHORITY\\SYSTEM' }),
    },
    {
      name: 'container runAsNonRoot overrides the pod one',
      pod: { runAsNonRoot: true },
      container: { runAsNonRoot: false },
      expected: { runAsNonRoot: false },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(determineEffectiveSecurityContext(pod(c.pod, []), container(c.container))).to.deep.equal(c.expected);
    });
  }

  it('never changes the pod or the container it reads', () => {
    const p = pod(win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}' }), []);
    const c = container(win({ gmsaCredentialSpecName: 'logger' }));
    const before = JSON.stringify([p, c]);
    determineEffectiveSecurityContext(p, c);
    expect(JSON.stringify([p, c])).to.equal(before);
  });
});

describe('container Windows security context (what the runtime receives)', () => {
  const cases: { name: string; pod?: V1PodSecurityContext; container?: V1SecurityContext; expected: object }[] = [
    { name: 'nothing set: empty strings and false', expected: { run_as_username: '', credential_spec: '', host_process: false } },
    {
      name: 'pod gMSA contents and user reach every container',
      pod: win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}', runAsUserName: 'ContainerUser' }),
      expected: { run_as_username: 'ContainerUser', credential_spec: '{"a":1}', host_process: false },
    },
    {
      name: 'a name without inlined contents runs without gMSA and without error',
      container: win({ gmsaCredentialSpecName: 'webapp' }),
      expected: { run_as_username: '', credential_spec: '', host_process: false },
    },
    {
      name: 'hostProcess inherited from the pod',
      pod: win({ hostProcess: true }),
      expected: { run_as_username: '', credential_spec: '', host_process: true },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(containerWindowsSecurityContext(pod(c.pod, []), container(c.container))).to.deep.equal(c.expected);
    });
  }
});

describe('sandbox Windows security context (generatePodSandboxWindowsConfig)', () => {
  // kuberuntime_sandbox.go generatePodSandboxWindowsConfig (kubernetes v1.34.12) never sets
  // namespace_options: the Windows sandbox context has the three fields only.
  it('takes the pod-level credential spec and runAsUserName, and no namespace_options', () => {
    const p = pod(win({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{"a":1}', runAsUserName: 'ContainerUser' }), [container()]);
    expect(sandboxWindowsSecurityContext(p)).to.deep.equal({
      run_as_username: 'ContainerUser',
      credential_spec: '{"a":1}',
      host_process: false,
    });
  });

  it('ignores container-level gMSA (only the pod level describes the sandbox)', () => {
    const p = pod(undefined, [container(win({ gmsaCredentialSpec: '{"b":2}' }))]);
    expect(sandboxWindowsSecurityContext(p).credential_spec).to.equal('');
  });

  it('is host_process when every container is HostProcess and hostNetwork is set, still without namespace_options', () => {
    const p = pod(undefined, [container(win({ hostProcess: true }))], { hostNetwork: true });
    expect(sandboxWindowsSecurityContext(p)).to.deep.equal({ run_as_username: '', credential_spec: '', host_process: true });
  });

  const refusals: { name: string; pod: V1Pod; message: string }[] = [
    {
      name: 'HostProcess and non-HostProcess containers mixed',
      pod: pod(win({ hostProcess: true }), [container(), container(win({ hostProcess: false }), 'b')], { hostNetwork: true }),
      message: 'pod must not contain both HostProcess and non-HostProcess containers',
    },
    {
      name: 'an init container that is not HostProcess counts too',
      pod: { ...pod(undefined, [container(win({ hostProcess: true }))], { hostNetwork: true, initContainers: [container(undefined, 'init')] }) },
      message: 'pod must not contain both HostProcess and non-HostProcess containers',
    },
    {
      name: 'HostProcess without hostNetwork',
      pod: pod(win({ hostProcess: true }), [container()]),
      message: 'hostNetwork is required if Pod contains HostProcess containers',
    },
    {
      name: 'pod says hostProcess false while all containers say true',
      pod: pod(win({ hostProcess: false }), [container(win({ hostProcess: true }))], { hostNetwork: true }),
      message: "pod must not contain any HostProcess containers if Pod's WindowsOptions.HostProcess is set to false",
    },
  ];
  for (const r of refusals) {
    it(`refuses: ${r.name}`, () => {
      expect(() => sandboxWindowsSecurityContext(r.pod)).to.throw(KubeletConfigError, r.message);
    });
  }
});

describe('runAsNonRoot with Windows users (verifyRunAsNonRoot)', () => {
  const cases: { name: string; pod?: V1PodSecurityContext; container?: V1SecurityContext; imageUser: string; expected: string | undefined }[] = [
    { name: 'without runAsNonRoot anything goes', pod: win({ runAsUserName: 'ContainerAdministrator' }), imageUser: '', expected: undefined },
    {
      name: 'ContainerAdministrator is root',
      pod: { runAsNonRoot: true, ...win({ runAsUserName: 'ContainerAdministrator' }) },
      imageUser: '',
      expected: `container's runAsUserName (ContainerAdministrator) which will be regarded as root identity and will break non-root policy (pod: "web_default(u-1)", container: app)`,
    },
    {
      name: 'in any case',
      pod: { runAsNonRoot: true },
      container: win({ runAsUserName: 'CONTAINERADMINISTRATOR' }),
      imageUser: 'ContainerUser',
      expected: `container's runAsUserName (CONTAINERADMINISTRATOR) which will be regarded as root identity and will break non-root policy (pod: "web_default(u-1)", container: app)`,
    },
    { name: 'ContainerUser is not root, whatever the image says', pod: { runAsNonRoot: true, ...win({ runAsUserName: 'ContainerUser' }) }, imageUser: 'ContainerAdministrator', expected: undefined },
    {
      name: 'without runAsUserName the image user decides (servercore: ContainerAdministrator)',
      pod: { runAsNonRoot: true },
      imageUser: 'ContainerAdministrator',
      expected: `container's runAsUser (ContainerAdministrator) which will be regarded as root identity and will break non-root policy (pod: "web_default(u-1)", container: app)`,
    },
    { name: 'nanoserver image user ContainerUser passes', pod: { runAsNonRoot: true }, imageUser: 'ContainerUser', expected: undefined },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(verifyRunAsNonRoot(pod(c.pod, []), container(c.container), c.imageUser)).to.equal(c.expected);
    });
  }
});
