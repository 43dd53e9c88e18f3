// The three runtime flavors (--runtime-flavor): where each hands the credential spec to its
// backend, when that hand-off is cleaned up, and the texts and gRPC codes of each.
// Upstream followed, per flavor:
// - dockershim-kep: the GMSA KEP (keps/sig-windows, "Windows GMSA"), moby v24.0.0 daemon/oci_windows.go;
// - cri-dockerd: Mirantis cri-dockerd v0.4.x core/helpers_windows.go (applyGMSAConfig,
//   removeGMSARegistryValue, removeAllGMSARegistryValues), core/container_create.go,
//   core/container_remove.go, core/container_start.go, core/security_context_windows.go;
// - containerd: v2.2.7 internal/cri/server/container_create.go (buildWindowsSpec),
//   internal/cri/server/podsandbox/sandbox_run_windows.go (sandboxContainerSpec),
//   internal/cri/server/container_start.go, core/runtime/v2/task_manager.go.
import { expect } from 'chai';
import { mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { unaryCall } from '../../src/cri/proto.js';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import {
  CONTAINER_EXITED,
  CONTAINER_RUNNING,
  createWindowsContainer,
  credentialSpecLeftovers,
  execSync,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  kepExampleWith,
  NO_LEFTOVERS,
  rejection,
  removeAllPods,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
  type InProcessRuntime,
} from './windows-support.js';

const GMSA = { run_as_username: 'NT AUTHORITY\\NETWORK SERVICE', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
const NO_SID = kepExampleWith((doc) => delete doc.DomainJoinConfig.Sid);
const STAGED_FILE = /^credentialspec=file:\/\/k8s-cred-spec-[0-9a-f]{80}\.json$/;
const STAGED_VALUE = /^credentialspec=registry:\/\/(k8s-cred-spec-[0-9a-f]{80})$/;
const HOST_PROCESS_ANNOTATION = 'microsoft.com/hostprocess-container';

/** ContainerStatus verbose info["info"], parsed. */
async function containerInfo(rt: InProcessRuntime, id: string): Promise<any> {
  const { info } = await unaryCall(rt.cri.runtime, 'ContainerStatus', { container_id: id, verbose: true });
  return JSON.parse(info!['info']!);
}

/**
 * What Docker holds for a cri-dockerd container (`docker inspect`: HostConfig.SecurityOpt and the
 * container's spec): cri-dockerd's verbose ContainerStatus shows only sandboxID and pid, so the
 * tests read the runtime's record.
 */
function dockerView(rt: InProcessRuntime, id: string): { securityOptions: string[]; runtimeSpec: any } {
  const { containers } = rt.runtime.context;
  const record = containers.get(id)!;
  return { securityOptions: [...record.securityOptions], runtimeSpec: containers.specOf(record) };
}

async function sandboxInfo(rt: InProcessRuntime, id: string): Promise<any> {
  const { info } = await unaryCall(rt.cri.runtime, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
  return JSON.parse(info!['info']!);
}

async function start(rt: InProcessRuntime, id: string): Promise<void> {
  await unaryCall(rt.cri.runtime, 'StartContainer', { container_id: id }, { timeoutMs: 10_000 });
}

async function remove(rt: InProcessRuntime, id: string): Promise<void> {
  await unaryCall(rt.cri.runtime, 'RemoveContainer', { container_id: id }, { timeoutMs: 10_000 });
}

describe('runtime flavors: the credential spec hand-off, its cleanup, texts and codes', function () {
  this.timeout(60_000);
  let rt: InProcessRuntime | undefined;
  const runtime = (): InProcessRuntime => {
    if (rt === undefined) throw new Error('no runtime (see the before each hook)');
    return rt;
  };
  afterEach(async () => {
    if (rt !== undefined) {
      await removeAllPods(rt.cri).catch(() => undefined);
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
      rt = undefined;
    }
  });

  async function open(flavor: string, adMode = 'windows-server'): Promise<InProcessRuntime> {
    rt = await startInProcessRuntime({ runtimeFlavor: flavor, adMode });
    return rt;
  }

  async function gmsaContainer(name: string, security: Record<string, unknown> = GMSA, podSecurity: Record<string, unknown> = GMSA) {
    const pod = windowsPodConfig(name, join(runtime().dir, 'pods', name), podSecurity);
    return createWindowsContainer(runtime().cri, pod, windowsContainerConfig('app', IIS, security));
  }

  describe('dockershim-kep (default): a temporary file, gone once StartContainer returns', () => {
    it('is the default, and names the flavor in crictl inspect', async () => {
      rt = await startInProcessRuntime({});
      const { containerId } = await gmsaContainer('kep-default');
      const info = await containerInfo(runtime(), containerId);
      expect(info.platform.runtimeFlavor).to.equal('dockershim-kep');
      expect(info.securityOptions).to.have.length(1);
      expect(info.securityOptions[0]).to.match(STAGED_FILE);
      expect((await credentialSpecLeftovers(runtime().stateDir)).files).to.have.length(1);
      await start(runtime(), containerId);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
      // The document HCS accepted, after start; the HostProcess annotation as hcsshim reads it.
      const spec = (await containerInfo(runtime(), containerId)).runtimeSpec;
      expect(spec.windows.credentialSpec).to.deep.equal(JSON.parse(KEP_EXAMPLE_CREDENTIAL_SPEC));
      expect(spec.annotations[HOST_PROCESS_ANNOTATION]).to.equal('false');
    });

    it('refuses a HostProcess disagreement at create with INVALID_ARGUMENT', async () => {
      await open('dockershim-kep');
      const err = await rejection(gmsaContainer('kep-hpc', { host_process: true }, {}));
      expect(err.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
      expect(err.details).to.equal('pod spec and all containers inside must have the HostProcess field set to be valid');
    });
  });

  describe('cri-dockerd: a registry value kept until RemoveContainer', () => {
    it('writes k8s-cred-spec-<80 hex> under the CredentialSpecs key at create, keeps it through start, removes it at RemoveContainer', async () => {
      await open('cri-dockerd');
      const { containerId, podId } = await gmsaContainer('dockerd-gmsa');
      // cri-dockerd core/container_status.go: the verbose info is {sandboxID, pid} (convert.go).
      expect(await containerInfo(runtime(), containerId)).to.deep.equal({ sandboxID: podId, pid: 0 });
      const [option] = dockerView(runtime(), containerId).securityOptions;
      const name = STAGED_VALUE.exec(option!)?.[1];
      expect(name, option).to.be.a('string');
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal({ files: [], registryValues: [name] });
      expect(runtime().runtime.context.windows.handoff.registry.getStringValue(
        'HKLM\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Virtualization\\Containers\\CredentialSpecs', name!,
      )).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      await start(runtime(), containerId);
      expect((await credentialSpecLeftovers(runtime().stateDir)).registryValues).to.deep.equal([name]);
      await unaryCall(runtime().cri.runtime, 'StopContainer', { container_id: containerId, timeout: 0 }, { timeoutMs: 10_000 });
      expect((await credentialSpecLeftovers(runtime().stateDir)).registryValues).to.deep.equal([name]);
      await remove(runtime(), containerId);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
    });

    it('keeps the value after a failed start, with cri-dockerd\'s wrapping of the daemon error and code UNKNOWN', async () => {
      await open('cri-dockerd');
      const { containerId } = await gmsaContainer('dockerd-bad', { ...GMSA, credential_spec: NO_SID });
      const err = await rejection(start(runtime(), containerId));
      expect(err.code).to.equal(GrpcStatus.UNKNOWN);
      expect(err.details).to.equal(
        `failed to start container "${containerId}": Error response from daemon: invalid credential spec: DomainJoinConfig.Sid is required (cri-winsim schema check)`,
      );
      const { status } = await unaryCall(runtime().cri.runtime, 'ContainerStatus', { container_id: containerId });
      expect([status!.state, status!.reason]).to.deep.equal([CONTAINER_EXITED, 'StartError']);
      expect((await credentialSpecLeftovers(runtime().stateDir)).registryValues).to.have.length(1);
      await remove(runtime(), containerId);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
    });

    it('fails RemoveContainer with cri-dockerd\'s clean-up text when the value cannot be removed, and removes it on the retry', async () => {
      await open('cri-dockerd');
      const { containerId } = await gmsaContainer('dockerd-remove');
      const [name] = (await credentialSpecLeftovers(runtime().stateDir)).registryValues;
      // The registry's file cannot be replaced while a directory stands in its place.
      const registryFile = join(runtime().stateDir, 'registry', 'registry.json');
      await unlink(registryFile);
      await mkdir(join(registryFile, 'blocked'), { recursive: true });
      const err = await rejection(remove(runtime(), containerId));
      expect(err.code).to.equal(GrpcStatus.UNKNOWN);
      expect(err.details).to.match(new RegExp(
        `^failed to run platform-specific clean ups for container "${containerId}": ` +
          `\\[unable to remove registry value "SOFTWARE\\\\\\\\Microsoft\\\\\\\\Windows NT\\\\\\\\CurrentVersion\\\\\\\\Virtualization\\\\\\\\Containers\\\\\\\\CredentialSpecs"/"${name}": .+\\]$`,
      ));
      await rm(registryFile, { recursive: true, force: true });
      await remove(runtime(), containerId);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
      const { containers } = await unaryCall(runtime().cri.runtime, 'ListContainers', {});
      expect(containers).to.deep.equal([]);
    });

    it('sweeps the values a crashed run left when it starts again', async () => {
      await open('cri-dockerd');
      await gmsaContainer('dockerd-crash');
      expect((await credentialSpecLeftovers(runtime().stateDir)).registryValues).to.have.length(1);
      const dir = runtime().dir;
      await runtime().crash();
      rt = await startInProcessRuntime({ runtimeFlavor: 'cri-dockerd' }, dir);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
    });

    it('ignores host_process, as Docker has no HostProcess containers: no agreement check, no annotation, an isolated identity', async () => {
      await open('cri-dockerd');
      const pod = windowsPodConfig('dockerd-hpc', join(runtime().dir, 'pods', 'dockerd-hpc'), { host_process: true });
      const { containerId, podId } = await createWindowsContainer(runtime().cri, pod, windowsContainerConfig('app', IIS, {}));
      const spec = dockerView(runtime(), containerId).runtimeSpec;
      expect(spec.annotations).to.not.have.property(HOST_PROCESS_ANNOTATION);
      expect((await sandboxInfo(runtime(), podId)).runtimeSpec.annotations).to.not.have.property(HOST_PROCESS_ANNOTATION);
      await start(runtime(), containerId);
      // A HostProcess container would run as the node (hostname WINNODE1); this one is the pod.
      const hostname = await execSync(runtime().cri, containerId, ['hostname']);
      expect(hostname.stdout.trim()).to.equal('dockerd-hpc');
    });

    it('refuses --credspec-transport file', async () => {
      const err = await startInProcessRuntime({ runtimeFlavor: 'cri-dockerd', credentialSpecTransport: 'file' }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).to.equal('--credspec-transport file: the cri-dockerd flavor hands the credential spec over in a registry value');
    });
  });

  describe('containerd: no hand-off, the credential spec string in the OCI specs', () => {
    it('puts the string in windows.credentialSpec of the container at create and of the pause sandbox, and stages nothing', async () => {
      await open('containerd');
      const { containerId, podId } = await gmsaContainer('ctrd-gmsa');
      const info = await containerInfo(runtime(), containerId);
      expect(info.platform.runtimeFlavor).to.equal('containerd');
      expect(info.securityOptions).to.deep.equal([]);
      expect(info.runtimeSpec.windows.credentialSpec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(info.runtimeSpec.process.user.username).to.equal('NT AUTHORITY\\NETWORK SERVICE');
      expect(info.runtimeSpec.annotations[HOST_PROCESS_ANNOTATION]).to.equal('false');
      const sandbox = (await sandboxInfo(runtime(), podId)).runtimeSpec;
      expect(sandbox.windows.credentialSpec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      expect(sandbox.process.user.username).to.equal('NT AUTHORITY\\NETWORK SERVICE');
      expect(sandbox.annotations[HOST_PROCESS_ANNOTATION]).to.equal('false');
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
      await start(runtime(), containerId);
      const { status } = await unaryCall(runtime().cri.runtime, 'ContainerStatus', { container_id: containerId });
      expect(status!.state).to.equal(CONTAINER_RUNNING);
      // Still the string after start: hcsshim read it from the spec.
      expect((await containerInfo(runtime(), containerId)).runtimeSpec.windows.credentialSpec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
      const upn = await execSync(runtime().cri, containerId, ['cmd', '/c', 'whoami /upn']);
      expect(upn.stdout.trim()).to.equal('WebApplication1$@contoso.com');
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
    });

    it('uses the pause image\'s user for a sandbox without run_as_username, and leaves out credentialSpec without a spec', async () => {
      await open('containerd');
      const pod = windowsPodConfig('ctrd-plain', join(runtime().dir, 'pods', 'ctrd-plain'), {});
      const { podId } = await createWindowsContainer(runtime().cri, pod, windowsContainerConfig('app', IIS, {}));
      const sandbox = (await sandboxInfo(runtime(), podId)).runtimeSpec;
      expect(sandbox.process.user.username).to.equal('ContainerUser');
      expect(sandbox.windows?.credentialSpec).to.equal(undefined);
    });

    it('refuses a HostProcess disagreement with containerd\'s wrapped text and code UNKNOWN, leaving nothing', async () => {
      await open('containerd');
      const err = await rejection(gmsaContainer('ctrd-hpc', { host_process: true }, {}));
      expect(err.code).to.equal(GrpcStatus.UNKNOWN);
      expect(err.details).to.match(
        /^failed to generate container "[0-9a-f]{64}" spec: failed to generate spec opts: pod spec and all containers inside must have the HostProcess field set to be valid$/,
      );
      const { containers } = await unaryCall(runtime().cri.runtime, 'ListContainers', {});
      expect(containers).to.deep.equal([]);
    });

    it('marks a HostProcess container with the annotation and keeps the image\'s working directory (C:\\hpc only when none is named)', async () => {
      await open('containerd');
      const pod = windowsPodConfig('ctrd-hostprocess', join(runtime().dir, 'pods', 'ctrd-hostprocess'), { host_process: true });
      const config = { ...windowsContainerConfig('app', IIS, { host_process: true }), working_dir: '' };
      const { containerId } = await createWindowsContainer(runtime().cri, pod, config);
      // The IIS image names C:\ as its working directory: containerd keeps it.
      expect((await containerInfo(runtime(), containerId)).runtimeSpec.process.cwd).to.equal('C:\\');
      expect((await containerInfo(runtime(), containerId)).runtimeSpec.annotations[HOST_PROCESS_ANNOTATION]).to.equal('true');
    });

    it('fails a start with the task-creation wrapping and code UNKNOWN, with nothing to clean up', async () => {
      await open('containerd');
      const { containerId } = await gmsaContainer('ctrd-bad', { ...GMSA, credential_spec: NO_SID });
      const err = await rejection(start(runtime(), containerId));
      expect(err.code).to.equal(GrpcStatus.UNKNOWN);
      expect(err.details).to.equal(
        'failed to create containerd task: failed to create shim task: invalid credential spec: DomainJoinConfig.Sid is required (cri-winsim schema check)',
      );
      await remove(runtime(), containerId);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal(NO_LEFTOVERS);
    });

    it('refuses --credspec-transport', async () => {
      const err = await startInProcessRuntime({ runtimeFlavor: 'containerd', credentialSpecTransport: 'registry' }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).to.equal('--credspec-transport registry: the containerd flavor has no credential spec hand-off (the spec string is in the OCI spec)');
    });
  });

  it('refuses an unknown flavor before anything is created', async () => {
    const err = await startInProcessRuntime({ runtimeFlavor: 'cri-o' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).to.equal('--runtime-flavor: must be one of dockershim-kep, cri-dockerd, containerd, not "cri-o"');
  });

  it('leaves no credential spec behind after any sequence, in every flavor', async () => {
    for (const flavor of ['dockershim-kep', 'cri-dockerd', 'containerd']) {
      await open(flavor);
      const good = await gmsaContainer(`seq-${flavor}-ok`);
      const bad = await gmsaContainer(`seq-${flavor}-bad`, { ...GMSA, credential_spec: NO_SID });
      const never = await gmsaContainer(`seq-${flavor}-never`);
      await start(runtime(), good.containerId);
      await rejection(start(runtime(), bad.containerId));
      await rejection(gmsaContainer(`seq-${flavor}-hpc`, { ...GMSA, host_process: true })).catch(() => undefined);
      expect(never.containerId).to.match(/^[0-9a-f]{64}$/);
      await removeAllPods(runtime().cri);
      expect(await credentialSpecLeftovers(runtime().stateDir), flavor).to.deep.equal(NO_LEFTOVERS);
      await rt!.close();
      await rm(rt!.dir, { recursive: true, force: true });
      rt = undefined;
    }
  });
});

describe('runtime flavors through the real crictl (crictl inspect / inspectp)', function () {
  this.timeout(60_000);
  let rt: RuntimeHandle | undefined;
  afterEach(async () => {
    await rt?.stop();
    rt = undefined;
  });

  async function createWith(flavor: string): Promise<{ podId: string; containerId: string }> {
    rt = await startRuntime({ name: `flavor-${flavor}`, args: ['--runtime-flavor', flavor] });
    const pod = join(rt.dir, 'pod.json');
    const ctr = join(rt.dir, 'ctr.json');
    await writeFile(pod, JSON.stringify(windowsPodConfig('web', join(rt.dir, 'logs'), GMSA)));
    await writeFile(ctr, JSON.stringify(windowsContainerConfig('iis', IIS, GMSA)));
    await runCrictl(rt, ['pull', IIS]);
    const podId = (await runCrictl(rt, ['runp', pod])).stdout.trim();
    const containerId = (await runCrictl(rt, ['create', podId, ctr, pod])).stdout.trim();
    return { podId, containerId };
  }

  it('containerd: crictl inspect shows windows.credentialSpec as the string before start; inspectp shows it on the pause spec', async function () {
    requireCriTool(this, 'crictl');
    const { podId, containerId } = await createWith('containerd');
    const inspected = await crictlJson(rt!, ['inspect', containerId]);
    expect(inspected.status.state).to.equal('CONTAINER_CREATED');
    expect(inspected.info.runtimeSpec.windows.credentialSpec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
    expect(inspected.info.securityOptions).to.deep.equal([]);
    expect(inspected.info.platform.runtimeFlavor).to.equal('containerd');
    const pod = await crictlJson(rt!, ['inspectp', podId]);
    expect(pod.info.runtimeSpec.windows.credentialSpec).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);
    expect(pod.info.runtimeSpec.process.user.username).to.equal('NT AUTHORITY\\NETWORK SERVICE');
  });

  it('cri-dockerd: crictl inspect shows cri-dockerd\'s info (sandboxID, pid); the registry value is written at create and kept until RemoveContainer', async function () {
    requireCriTool(this, 'crictl');
    const { podId, containerId } = await createWith('cri-dockerd');
    const inspected = await crictlJson(rt!, ['inspect', containerId]);
    // cri-dockerd core/container_status.go + convert.go containerInspectToRuntimeAPIContainerInfo.
    expect(inspected.info).to.deep.equal({ sandboxID: podId, pid: 0 });
    // The registry value the registry:// option names is written at create.
    expect((await credentialSpecLeftovers(rt!.stateDir)).registryValues).to.have.length(1);
    const pod = await crictlJson(rt!, ['inspectp', podId]);
    expect(pod.info.runtimeSpec.windows?.credentialSpec).to.equal(undefined);
    await runCrictl(rt!, ['start', containerId]);
    const started = await crictlJson(rt!, ['inspect', containerId]);
    expect(started.status.state).to.equal('CONTAINER_RUNNING');
    // Kept until RemoveContainer.
    expect((await credentialSpecLeftovers(rt!.stateDir)).registryValues).to.have.length(1);
    await runCrictl(rt!, ['rm', '-f', containerId]);
    expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
  });
});
