// Every node ↔ Active Directory failure mode (REFERENCE §9) and every credential spec problem,
// reproduced through the CRI socket of `cri-winsim runtime` with the generated client, in both AD
// modes. Each case pins the gRPC status code, the container's state, exit code, reason and message
// (containerd's start failure: EXITED, 128, StartError), and that no credential spec file or
// registry value is left behind. Realistic mode: the container starts and the identity commands
// inside report the failure with the real codes.
import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import {
  CONTAINER_EXITED,
  CONTAINER_RUNNING,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  NO_LEFTOVERS,
  createWindowsContainer,
  credentialSpecLeftovers,
  execSync,
  kepExampleWith,
  rejection,
  removeAllPods,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
  writeNodeFile,
} from './windows-support.js';

type NodeName = 'WINNODE1' | 'workgroup' | 'dc-down' | 'ccg-broken';

const CCG_PLUGIN = '{859E1386-BDB4-49E8-85C7-3070B13920E1}';

/** What StartContainer answers when the start fails. */
interface StartFailure {
  code: GrpcStatus;
  /** The whole message (gRPC details and ContainerStatus.message). */
  message: RegExp;
}

/** A command run in the started container (realistic mode) and what it prints. */
interface IdentityCheck {
  cmd: string[];
  exitCode: number;
  output: string;
}

interface FailureCase {
  name: string;
  node: NodeName;
  credentialSpec?: string;
  runAsUsername?: string;
  strict: StartFailure;
  /** Realistic mode: fails the same way, or starts and the commands show the failure. */
  realistic: StartFailure | IdentityCheck[];
}

const withAccount = (name: string) =>
  kepExampleWith((doc) => {
    doc.DomainJoinConfig.MachineAccountName = name;
    doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: name, Scope: 'DEMO' }, { Name: name, Scope: 'contoso.com' }];
  });

const withCcg = kepExampleWith((doc) => {
  doc.ActiveDirectoryConfig.HostAccountConfig = { PortableCcgVersion: '1', PluginGUID: CCG_PLUGIN, PluginInput: 'contoso.com:ccg-reader' };
});

const FAILED_PRECONDITION = GrpcStatus.FAILED_PRECONDITION;

const CASES: FailureCase[] = [
  {
    name: 'node not domain-joined (and no CCG plugin)',
    node: 'workgroup',
    credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC,
    strict: {
      code: FAILED_PRECONDITION,
      message: /^node WINNODE1 is not joined to a domain and the credential spec has no ActiveDirectoryConfig\.HostAccountConfig, so it cannot retrieve the password of gMSA DEMO\\WebApplication1 \(ERROR_NO_LOGON_SERVERS\)$/,
    },
    realistic: [
      { cmd: ['nltest', '/query'], exitCode: 0, output: 'Connection Status = 1311 0x51f ERROR_NO_LOGON_SERVERS' },
      { cmd: ['klist'], exitCode: 1, output: 'klist failed with 0xc000005e/-1073741730' },
      { cmd: ['nltest', '/parentdomain'], exitCode: 0, output: 'contoso.com. (1)' },
    ],
  },
  {
    name: 'node not allowed to retrieve the gMSA password',
    node: 'WINNODE1',
    credentialSpec: withAccount('SqlReporting'),
    strict: {
      code: FAILED_PRECONDITION,
      message: /^node WINNODE1 \(WINNODE1\$\) is not allowed to retrieve the managed password of gMSA DEMO\\SqlReporting: it is not in the gMSA's PrincipalsAllowedToRetrieveManagedPassword \(Test-ADServiceAccount SqlReporting would return False; ERROR_NO_TRUST_LSA_SECRET\)$/,
    },
    realistic: [
      { cmd: ['nltest', '/query'], exitCode: 0, output: 'Connection Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET' },
      { cmd: ['nltest', '/sc_verify:contoso.com'], exitCode: 1, output: 'I_NetLogonControl failed: Status = 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET' },
      { cmd: ['klist'], exitCode: 1, output: 'klist failed with 0xc000018a/-1073741430' },
    ],
  },
  {
    name: 'gMSA missing from the domain',
    node: 'WINNODE1',
    credentialSpec: withAccount('NoSuchService'),
    strict: {
      code: FAILED_PRECONDITION,
      message: /^gMSA NoSuchService \(DomainJoinConfig\.MachineAccountName\) does not exist in domain contoso\.com \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    },
    realistic: [{ cmd: ['nltest', '/query'], exitCode: 0, output: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT' }],
  },
  {
    name: 'credential spec domain unknown to the node',
    node: 'WINNODE1',
    credentialSpec: kepExampleWith((doc) => {
      Object.assign(doc.DomainJoinConfig, { DnsName: 'fabrikam.com', DnsTreeName: 'fabrikam.com', NetBiosName: 'FABRIKAM' });
    }),
    strict: {
      code: FAILED_PRECONDITION,
      message: /^credential spec domain fabrikam\.com \(DomainJoinConfig\.DnsName\) is not a domain node WINNODE1 can reach in its Active Directory \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    },
    realistic: [
      { cmd: ['nltest', '/query'], exitCode: 0, output: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT' },
      { cmd: ['nltest', '/parentdomain'], exitCode: 0, output: 'fabrikam.com. (1)' },
    ],
  },
  {
    name: 'credential spec SID does not match the domain',
    node: 'WINNODE1',
    credentialSpec: kepExampleWith((doc) => {
      doc.DomainJoinConfig.Sid = 'S-1-5-21-1111111111-2222222222-3333333333';
    }),
    strict: {
      code: FAILED_PRECONDITION,
      message: /^credential spec DomainJoinConfig\.Sid S-1-5-21-1111111111-2222222222-3333333333 is not the Sid of domain contoso\.com \(S-1-5-21-2126729477-2524075714-3094792973\) \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    },
    realistic: [{ cmd: ['nltest', '/query'], exitCode: 0, output: 'Connection Status = 1787 0x6fb ERROR_NO_TRUST_SAM_ACCOUNT' }],
  },
  {
    name: 'credential spec GUID does not match the domain',
    node: 'WINNODE1',
    credentialSpec: kepExampleWith((doc) => {
      doc.DomainJoinConfig.Guid = '00000000-1111-2222-3333-444444444444';
    }),
    strict: {
      code: FAILED_PRECONDITION,
      message: /^credential spec DomainJoinConfig\.Guid 00000000-1111-2222-3333-444444444444 is not the Guid of domain contoso\.com \(244818ae-87ca-4fcd-92ec-e79e5252348a\) \(ERROR_NO_TRUST_SAM_ACCOUNT\)$/,
    },
    realistic: [{ cmd: ['klist'], exitCode: 1, output: 'klist failed with 0xc000018b/-1073741429' }],
  },
  {
    name: 'domain controller unreachable',
    node: 'dc-down',
    credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC,
    strict: {
      code: FAILED_PRECONDITION,
      message: /^no domain controller of contoso\.com is reachable from node WINNODE1 \(ERROR_NO_LOGON_SERVERS\)$/,
    },
    realistic: [
      { cmd: ['nltest', '/sc_verify:contoso.com'], exitCode: 1, output: 'I_NetLogonControl failed: Status = 1311 0x51f ERROR_NO_LOGON_SERVERS' },
      { cmd: ['klist'], exitCode: 1, output: 'klist failed with 0xc0000022/-1073741790' },
    ],
  },
  {
    name: 'CCG plugin failure on a node that is not domain-joined',
    node: 'ccg-broken',
    credentialSpec: withCcg,
    strict: {
      code: GrpcStatus.UNKNOWN,
      message: /^hcsshim::CreateComputeSystem [0-9a-f]{64}: winapi error #3489792023: Failed to setup the external credentials for Container '[0-9a-f]{64}': The RPC server is unavailable\. \(0xC0020017\) \(CCG plugin \{859E1386-BDB4-49E8-85C7-3070B13920E1\} on node WINWORK1 failed\)$/,
    },
    realistic: {
      code: GrpcStatus.UNKNOWN,
      message: /^hcsshim::CreateComputeSystem [0-9a-f]{64}: winapi error #3489792023: .*\(0xC0020017\)/,
    },
  },
  {
    name: 'unknown run-as user',
    node: 'WINNODE1',
    credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC,
    runAsUsername: 'NoSuchUser',
    strict: { code: GrpcStatus.UNKNOWN, message: /^hcs::CreateProcess [0-9a-f]{64}: failed to log on as "NoSuchUser": The user name or password is incorrect\.$/ },
    realistic: { code: GrpcStatus.UNKNOWN, message: /: The user name or password is incorrect\.$/ },
  },
  {
    name: 'invalid credential spec document (schema)',
    node: 'WINNODE1',
    credentialSpec: kepExampleWith((doc) => {
      doc.DomainJoinConfig.Sid = 'S-1-5-21-x';
    }),
    strict: {
      code: GrpcStatus.INVALID_ARGUMENT,
      message: /^invalid credential spec: DomainJoinConfig\.Sid "S-1-5-21-x" is not a domain SID \(S-1-5-21-a-b-c\) \(cri-winsim schema check\)$/,
    },
    realistic: { code: GrpcStatus.INVALID_ARGUMENT, message: /^invalid credential spec: DomainJoinConfig\.Sid "S-1-5-21-x"/ },
  },
  {
    name: 'invalid credential spec document (not JSON)',
    node: 'WINNODE1',
    credentialSpec: '{"CmsPlugins": ["ActiveDirectory"],',
    strict: { code: GrpcStatus.INVALID_ARGUMENT, message: /^invalid credential spec: not valid JSON: / },
    realistic: { code: GrpcStatus.INVALID_ARGUMENT, message: /^invalid credential spec: not valid JSON: / },
  },
];

const isStartFailure = (r: StartFailure | IdentityCheck[]): r is StartFailure => !Array.isArray(r);

describe('Windows identity failures through the CRI socket', function () {
  this.timeout(60_000);
  let nodesDir = '';
  const nodeFiles = new Map<NodeName, string | undefined>();

  before(async () => {
    nodesDir = await mkdtemp(join(tmpdir(), 'cri-winsim-nodes-'));
    nodeFiles.set('WINNODE1', undefined);
    nodeFiles.set('workgroup', await writeNodeFile(nodesDir, 'workgroup.yaml', (n) => {
      delete n.node.domain;
    }));
    nodeFiles.set('dc-down', await writeNodeFile(nodesDir, 'dc-down.yaml', (n) => {
      for (const dc of n.domains[0]!.domainControllers) dc.reachable = false;
    }));
    const ccg = parseYaml(await readFile(fileURLToPath(new URL('../../../examples/nodes/ccg-workgroup.yaml', import.meta.url)), 'utf8'));
    ccg.node.ccgPlugin.healthy = false;
    const ccgFile = join(nodesDir, 'ccg-broken.yaml');
    await writeFile(ccgFile, toYaml(ccg));
    nodeFiles.set('ccg-broken', ccgFile);
  });
  after(async () => {
    if (nodesDir !== '') await rm(nodesDir, { recursive: true, force: true });
  });

  for (const mode of ['strict', 'realistic'] as const) {
    for (const nodeName of ['WINNODE1', 'workgroup', 'dc-down', 'ccg-broken'] as const) {
      const cases = CASES.filter((c) => c.node === nodeName);
      describe(`--ad-mode ${mode}, node ${nodeName}`, () => {
        let rt: RuntimeHandle | undefined;
        let cri: CriClient | undefined;
        const client = (): CriClient => {
          if (cri === undefined) throw new Error('the runtime is not running (see the before all hook)');
          return cri;
        };

        before(async () => {
          const nodeFile = nodeFiles.get(nodeName);
          rt = await startRuntime({
            name: `windows-failures-${mode}-${nodeName}`,
            args: ['--ad-mode', mode, ...(nodeFile === undefined ? [] : ['--node', nodeFile])],
          });
          cri = createCriClient(rt.endpoint);
        });
        after(async () => {
          cri?.close();
          await rt?.stop();
        });

        cases.forEach((c, i) => {
          const expected = mode === 'strict' ? c.strict : c.realistic;
          const title = isStartFailure(expected)
            ? `${c.name}: StartContainer fails with ${GrpcStatus[expected.code]}, EXITED/128/StartError, nothing left`
            : `${c.name}: starts, and the identity commands report it`;
          it(title, async () => {
            const stateDir = rt!.stateDir;
            const security = { run_as_username: c.runAsUsername ?? 'ContainerUser', credential_spec: c.credentialSpec ?? '' };
            const pod = windowsPodConfig(`failure-${i}`, join(rt!.dir, 'pods', `failure-${i}`), security);
            const { containerId } = await createWindowsContainer(client(), pod, windowsContainerConfig('app', IIS, security));
            expect((await credentialSpecLeftovers(stateDir)).files, 'the spec is staged at create').to.have.length(c.credentialSpec ? 1 : 0);

            if (isStartFailure(expected)) {
              const err = await rejection(unaryCall(client().runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 }));
              expect(err.code, err.details).to.equal(expected.code);
              expect(err.details).to.match(expected.message);
              const { status } = await unaryCall(client().runtime, 'ContainerStatus', { container_id: containerId });
              expect([status!.state, status!.exit_code, status!.reason]).to.deep.equal([CONTAINER_EXITED, 128, 'StartError']);
              expect(status!.message).to.equal(err.details);
              expect(await credentialSpecLeftovers(stateDir)).to.deep.equal(NO_LEFTOVERS);
            } else {
              await unaryCall(client().runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 });
              const { status } = await unaryCall(client().runtime, 'ContainerStatus', { container_id: containerId });
              expect(status!.state).to.equal(CONTAINER_RUNNING);
              expect(await credentialSpecLeftovers(stateDir)).to.deep.equal(NO_LEFTOVERS);
              for (const check of expected) {
                const out = await execSync(client(), containerId, check.cmd);
                expect(out.exitCode, `${check.cmd.join(' ')}: ${out.stdout}${out.stderr}`).to.equal(check.exitCode);
                expect(out.stdout + out.stderr, check.cmd.join(' ')).to.contain(check.output);
              }
            }
            await unaryCall(client().runtime, 'RemoveContainer', { container_id: containerId });
            await removeAllPods(client());
            expect(await credentialSpecLeftovers(stateDir)).to.deep.equal(NO_LEFTOVERS);
          });
        });

        if (nodeName === 'WINNODE1') {
          it('the credential spec file removed between create and start: moby\'s read error, nothing left', async () => {
            const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
            const pod = windowsPodConfig('vanished', join(rt!.dir, 'pods', 'vanished'), security);
            const { containerId } = await createWindowsContainer(client(), pod, windowsContainerConfig('app', IIS, security));
            const [file] = (await credentialSpecLeftovers(rt!.stateDir)).files;
            await unlink(join(rt!.stateDir, 'CredentialSpecs', file!));
            const err = await rejection(unaryCall(client().runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 }));
            expect(err.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
            expect(err.details).to.equal(
              // moby v24.0.0 daemon/oci_windows.go readCredentialSpecFile.
              `failed to load credential spec for container ${containerId}: ` +
                `open ${join(rt!.stateDir, 'CredentialSpecs', file!)}: The system cannot find the file specified.`,
            );
            const { status } = await unaryCall(client().runtime, 'ContainerStatus', { container_id: containerId });
            expect([status!.state, status!.reason, status!.message]).to.deep.equal([CONTAINER_EXITED, 'StartError', err.details]);
            await removeAllPods(client());
            expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
          });

          it('without a credential spec the container starts; nltest /parentdomain has no domain (RPC_S_SERVER_UNAVAILABLE)', async () => {
            const pod = windowsPodConfig('no-gmsa', join(rt!.dir, 'pods', 'no-gmsa'), { run_as_username: 'ContainerAdministrator' });
            const { containerId } = await createWindowsContainer(client(), pod, windowsContainerConfig('app', IIS, { run_as_username: 'ContainerAdministrator' }));
            await unaryCall(client().runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 });
            const parent = await execSync(client(), containerId, ['nltest', '/parentdomain']);
            expect([parent.exitCode, parent.stdout.replace(/\r\n/g, '\n')]).to.deep.equal([1, 'Getting parent domain failed: Status = 1722 0x6ba RPC_S_SERVER_UNAVAILABLE\n']);
            const whoami = await execSync(client(), containerId, ['cmd', '/c', 'whoami']);
            expect(whoami.stdout).to.equal('user manager\\containeradministrator\r\n');
            await removeAllPods(client());
            expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
          });
        }
      });
    }
  }

  describe('HostProcess: sandbox and container must agree (containerd), and a HostProcess container is the node', () => {
    let rt: RuntimeHandle | undefined;
    let cri: CriClient | undefined;
    before(async () => {
      rt = await startRuntime({ name: 'windows-host-process' });
      cri = createCriClient(rt.endpoint);
      await unaryCall(cri.image, 'PullImage', { image: { image: IIS } }, { timeoutMs: 10_000 });
    });
    after(async () => {
      cri?.close();
      await rt?.stop();
    });

    for (const [sandboxHostProcess, containerHostProcess] of [[true, false], [false, true]] as const) {
      it(`sandbox host_process ${sandboxHostProcess}, container ${containerHostProcess}: CreateContainer is refused, nothing is staged`, async () => {
        const pod = windowsPodConfig(`hp-${sandboxHostProcess}`, join(rt!.dir, 'pods'), { host_process: sandboxHostProcess });
        const { pod_sandbox_id: podId } = await unaryCall(cri!.runtime, 'RunPodSandbox', { config: pod });
        const container = windowsContainerConfig('app', IIS, { host_process: containerHostProcess, credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC });
        const err = await rejection(unaryCall(cri!.runtime, 'CreateContainer', { pod_sandbox_id: podId, config: container, sandbox_config: pod }));
        expect(err.code).to.equal(GrpcStatus.INVALID_ARGUMENT);
        expect(err.details).to.equal('pod spec and all containers inside must have the HostProcess field set to be valid');
        expect((await unaryCall(cri!.runtime, 'ListContainers', {})).containers).to.deep.equal([]);
        expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
        await removeAllPods(cri!);
      });
    }

    it('a HostProcess container runs as NT AUTHORITY\\SYSTEM on the node, with the node\'s domain identity', async () => {
      const security = { host_process: true, run_as_username: 'NT AUTHORITY\\SYSTEM' };
      const pod = windowsPodConfig('hp-agent', join(rt!.dir, 'pods'), security);
      const { containerId } = await createWindowsContainer(cri!, pod, windowsContainerConfig('agent', IIS, security));
      await unaryCall(cri!.runtime, 'StartContainer', { container_id: containerId });
      const { info } = await unaryCall(cri!.runtime, 'ContainerStatus', { container_id: containerId, verbose: true });
      const spec = JSON.parse(info.info!).runtimeSpec;
      expect(spec.annotations['microsoft.com/hostprocess-container']).to.equal('true');
      expect(spec.process.user.username).to.equal('NT AUTHORITY\\SYSTEM');
      expect((await execSync(cri!, containerId, ['whoami'])).stdout).to.equal('nt authority\\system\r\n');
      expect((await execSync(cri!, containerId, ['hostname'])).stdout).to.equal('winnode1\r\n');
      expect((await execSync(cri!, containerId, ['whoami', '/upn'])).stdout).to.equal('WINNODE1$@contoso.com\r\n');
      expect((await execSync(cri!, containerId, ['cmd', '/c', 'echo %USERDOMAIN%\\%USERNAME%'])).stdout).to.equal('DEMO\\WINNODE1$\r\n');
      await removeAllPods(cri!);
    });
  });

  describe('registry transport (cri-dockerd cleanup points), strict', () => {
    let rt: RuntimeHandle | undefined;
    let cri: CriClient | undefined;
    before(async () => {
      rt = await startRuntime({ name: 'windows-failures-registry', args: ['--credspec-transport', 'registry', '--ad-mode', 'gmsa-kep'] });
      cri = createCriClient(rt.endpoint);
    });
    after(async () => {
      cri?.close();
      await rt?.stop();
    });

    it('a failed start keeps the registry value until RemoveContainer, which removes it', async () => {
      const security = { run_as_username: 'ContainerUser', credential_spec: withAccount('SqlReporting') };
      const pod = windowsPodConfig('registry-denied', join(rt!.dir, 'pods', 'registry-denied'), security);
      const { containerId } = await createWindowsContainer(cri!, pod, windowsContainerConfig('app', IIS, security));
      const err = await rejection(unaryCall(cri!.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 }));
      expect(err.code).to.equal(FAILED_PRECONDITION);
      expect(err.details).to.contain('ERROR_NO_TRUST_LSA_SECRET');
      const { status } = await unaryCall(cri!.runtime, 'ContainerStatus', { container_id: containerId });
      expect([status!.state, status!.exit_code, status!.reason, status!.message]).to.deep.equal([CONTAINER_EXITED, 128, 'StartError', err.details]);
      const kept = await credentialSpecLeftovers(rt!.stateDir);
      expect(kept.files).to.deep.equal([]);
      expect(kept.registryValues).to.have.length(1);
      await unaryCall(cri!.runtime, 'RemoveContainer', { container_id: containerId });
      expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
      await removeAllPods(cri!);
    });
  });

  describe('bad security options (a faulty dockershim layer, through the test seam)', () => {
    const badOptions: Array<[string, string[], RegExp]> = [
      ['no equals sign', ['credentialspec'], /^invalid security option: no equals sign in supplied value credentialspec$/],
      ['an unsupported option', ['seccomp=unconfined'], /^security option not supported: seccomp$/],
      [
        'an unknown scheme',
        ['credentialspec=ftp://spec.json'],
        /^invalid credential spec security option - value must be prefixed by 'file:\/\/', 'registry:\/\/', or 'raw:\/\/' followed by a non-empty value$/,
      ],
      ['an absolute file path', ['credentialspec=file://C:\\specs\\x.json'], /^invalid credential spec: file:\/\/ path cannot be absolute$/],
      ['a path outside the directory', ['credentialspec=file://../registry/registry.json'], /^invalid credential spec: file:\/\/ path must be under /],
      ['an unknown registry value', ['credentialspec=registry://k8s-cred-spec-missing'], /^registry credential spec "k8s-cred-spec-missing" for container [0-9a-f]{64} was not found$/],
    ];
    let replacement: string[] = [];
    let rt: Awaited<ReturnType<typeof startInProcessRuntime>> | undefined;
    before(async () => {
      rt = await startInProcessRuntime({ faults: { securityOptions: () => replacement } });
    });
    after(async () => {
      await rt?.close();
      if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
    });

    for (const [what, options, message] of badOptions) {
      it(`${what}: InvalidArgument with moby's text, EXITED/StartError, nothing left`, async () => {
        replacement = options;
        const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
        const pod = windowsPodConfig('bad-option', join(rt!.dir, 'pods'), security);
        const { containerId } = await createWindowsContainer(rt!.cri, pod, windowsContainerConfig('app', IIS, security));
        const err = await rejection(unaryCall(rt!.cri.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 }));
        expect(err.code, err.details).to.equal(GrpcStatus.INVALID_ARGUMENT);
        expect(err.details).to.match(message);
        const { status } = await unaryCall(rt!.cri.runtime, 'ContainerStatus', { container_id: containerId });
        expect([status!.state, status!.exit_code, status!.reason, status!.message]).to.deep.equal([CONTAINER_EXITED, 128, 'StartError', err.details]);
        expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
        await removeAllPods(rt!.cri);
        expect(await credentialSpecLeftovers(rt!.stateDir)).to.deep.equal(NO_LEFTOVERS);
      });
    }
  });
});
