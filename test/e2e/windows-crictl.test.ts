// The real crictl drives a Windows pod with a gMSA credential spec (the GMSA KEP's example) and a
// RunAsUserName through `cri-winsim runtime`: JSON configs with snake_case `windows.security_context`,
// the credential spec file that exists only between create and start, the OCI spec `crictl
// inspect` shows, and the identity commands through `crictl exec -s`.
import { expect } from 'chai';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import {
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  credentialSpecLeftovers,
  kepExampleWith,
  windowsContainerConfig,
  windowsPodConfig,
} from './windows-support.js';

const STAGED_FILE = /^k8s-cred-spec-[0-9a-f]{80}\.json$/;

/** Output without the CRLF of Windows programs. */
const text = (s: string): string => s.replace(/\r\n/g, '\n');
/** What `crictl exec -s` printed, without CRLF and the blank lines crictl adds after stdout and stderr. */
const printed = (s: string): string => `${text(s).trimEnd()}\n`;

describe('Windows workload identity through the real crictl', function () {
  this.timeout(60_000);

  describe('file transport (the GMSA KEP temporary file), strict mode', () => {
    let rt: RuntimeHandle | undefined;
    const files = { pod: '', web: '', shell: '', denied: '' };
    let podId = '';
    let webId = '';
    let stagedName = '';
    const runtime = (): RuntimeHandle => {
      if (rt === undefined) throw new Error('the runtime is not running (see the before all hook)');
      return rt;
    };
    const crictl = (args: string[], check = true) => runCrictl(runtime(), args, { check });
    const credentialSpecDir = () => join(runtime().stateDir, 'CredentialSpecs');

    before(async function () {
      requireCriTool(this, 'crictl');
      rt = await startRuntime({ name: 'windows-crictl', args: ['--ad-mode', 'gmsa-kep'] });
      const logs = join(rt.dir, 'pod-logs');
      mkdirSync(logs, { recursive: true });
      const security = { run_as_username: 'ContainerUser', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
      files.pod = join(rt.dir, 'pod.json');
      files.web = join(rt.dir, 'web.json');
      files.shell = join(rt.dir, 'shell.json');
      files.denied = join(rt.dir, 'denied.json');
      writeFileSync(files.pod, JSON.stringify(windowsPodConfig('webapp-gmsa', logs, security), null, 2));
      writeFileSync(files.web, JSON.stringify(windowsContainerConfig('iis', IIS, security), null, 2));
      writeFileSync(
        files.shell,
        JSON.stringify(windowsContainerConfig('identity-check', IIS, security, [
          'cmd', '/c', 'whoami & whoami /upn & echo %USERDOMAIN%\\%USERNAME% on %COMPUTERNAME% & hostname & nltest /parentdomain',
        ])),
      );
      const denied = kepExampleWith((doc) => {
        doc.DomainJoinConfig.MachineAccountName = 'SqlReporting';
        doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'SqlReporting', Scope: 'DEMO' }, { Name: 'SqlReporting', Scope: 'contoso.com' }];
      });
      writeFileSync(files.denied, JSON.stringify(windowsContainerConfig('reporting', IIS, { run_as_username: 'ContainerUser', credential_spec: denied })));
      await crictl(['pull', IIS]);
      podId = (await crictl(['runp', files.pod])).stdout.trim();
    });

    after(async () => {
      await rt?.stop();
    });

    it('crictl create writes the credential spec to a 0600 file named by the security option', async () => {
      webId = (await crictl(['create', podId, files.web, files.pod])).stdout.trim();
      expect(webId).to.match(/^[0-9a-f]{64}$/);
      const staged = await readdir(credentialSpecDir());
      expect(staged).to.have.length(1);
      stagedName = staged[0]!;
      expect(stagedName).to.match(STAGED_FILE);
      expect(statSync(join(credentialSpecDir(), stagedName)).mode & 0o777).to.equal(0o600);
      expect(statSync(credentialSpecDir()).mode & 0o777).to.equal(0o700);
      expect(await readFile(join(credentialSpecDir(), stagedName), 'utf8')).to.equal(KEP_EXAMPLE_CREDENTIAL_SPEC);

      const created = await crictlJson(runtime(), ['inspect', webId]);
      expect(created.status.state).to.equal('CONTAINER_CREATED');
      expect(created.info.securityOptions).to.deep.equal([`credentialspec=file://${stagedName}`]);
      expect(created.info.runtimeSpec.process.user.username).to.equal('ContainerUser');
    });

    it('crictl start starts it and the credential spec file is gone', async () => {
      if (webId === '') throw new Error('the container was not created by the previous test');
      await crictl(['start', webId]);
      expect(await readdir(credentialSpecDir())).to.deep.equal([]);
      const ps = await crictlJson(runtime(), ['ps', '-o', 'json', '--id', webId]);
      expect(ps.containers.map((c: { state: string }) => c.state)).to.deep.equal(['CONTAINER_RUNNING']);
    });

    it('crictl inspect shows the credential spec and the run-as user in the OCI spec (info.runtimeSpec)', async () => {
      const inspected = await crictlJson(runtime(), ['inspect', webId]);
      expect(inspected.status.state).to.equal('CONTAINER_RUNNING');
      const spec = inspected.info.runtimeSpec;
      expect(spec.windows.credentialSpec).to.deep.equal(JSON.parse(KEP_EXAMPLE_CREDENTIAL_SPEC));
      expect(spec.process.user.username).to.equal('ContainerUser');
      expect(spec.annotations['microsoft.com/hostprocess-container']).to.equal('false');
      // The Docker security option stays on record (as in HostConfig.SecurityOpt), its file does not.
      expect(inspected.info.securityOptions).to.deep.equal([`credentialspec=file://${stagedName}`]);
    });

    it('crictl exec -s whoami prints the run-as user', async () => {
      expect(printed((await crictl(['exec', '-s', webId, 'whoami'])).stdout)).to.equal('user manager\\containeruser\n');
    });

    it('crictl exec -s nltest /parentdomain prints the domain of the credential spec', async () => {
      expect(printed((await crictl(['exec', '-s', webId, 'nltest', '/parentdomain'])).stdout)).to.equal(
        'contoso.com. (1)\nThe command completed successfully\n',
      );
    });

    it('crictl exec -s: the secure channel, Kerberos tickets, %USERNAME% and the hostname', async () => {
      const verify = printed((await crictl(['exec', '-s', webId, 'nltest', '/sc_verify:contoso.com'])).stdout);
      expect(verify).to.contain('Trusted DC Name \\\\dc1.contoso.com');
      expect(verify).to.contain('Trust Verification Status = 0 0x0 NERR_Success');
      const klist = printed((await crictl(['exec', '-s', webId, 'klist'])).stdout);
      expect(klist).to.contain('Client: WebApplication1$ @ CONTOSO.COM');
      expect(klist).to.contain('Kdc Called: dc1.contoso.com');
      expect(printed((await crictl(['exec', '-s', webId, 'cmd', '/c', 'echo %USERNAME%'])).stdout)).to.equal('ContainerUser\n');
      expect(printed((await crictl(['exec', '-s', webId, 'hostname'])).stdout)).to.equal('webapp-gmsa\n');
      // ContainerUser is a local account: no UPN, and crictl exits 1 on the non-zero exit code.
      const upn = await crictl(['exec', '-s', webId, 'whoami', '/upn'], false);
      expect(upn.code).to.equal(1);
      expect(text(upn.stdout + upn.stderr)).to.contain('the current logged-on user is not a domain user');
    });

    it("the container's own command (cmd /c …) sees the same identity, in its log", async () => {
      const id = (await crictl(['create', podId, files.shell, files.pod])).stdout.trim();
      await crictl(['start', id]);
      expect(await readdir(credentialSpecDir())).to.deep.equal([]);
      let logs = '';
      for (let attempt = 0; attempt < 50; attempt++) {
        const status = await crictlJson(runtime(), ['inspect', id]);
        if (status.status.state === 'CONTAINER_EXITED') {
          expect(status.status.exitCode).to.equal(0);
          logs = text((await crictl(['logs', id])).stdout + (await crictl(['logs', id])).stderr);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(logs).to.contain('user manager\\containeruser\n');
      expect(logs).to.contain('User Manager\\ContainerUser on WEBAPP-GMSA');
      expect(logs).to.contain('webapp-gmsa\n');
      expect(logs).to.contain('contoso.com. (1)\nThe command completed successfully\n');
      expect(logs).to.contain('ERROR: Unable to get User Principal Name (UPN)');
    });

    it('crictl inspectp shows the pod-level Windows security context (info.platform.windowsSecurityContext)', async () => {
      const inspected = await crictlJson(runtime(), ['inspectp', podId]);
      expect(inspected.info.platform.windowsSecurityContext).to.deep.equal({
        runAsUsername: 'ContainerUser',
        credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC,
        hostProcess: false,
        namespaceOptions: { network: 'POD' },
      });
      expect(inspected.info.runtimeSpec.annotations['microsoft.com/hostprocess-container']).to.equal('false');
    });

    it('a gMSA the node may not use: crictl start fails, the container is EXITED with StartError, no file is left', async () => {
      const id = (await crictl(['create', podId, files.denied, files.pod])).stdout.trim();
      expect(await readdir(credentialSpecDir())).to.have.length(1);
      const start = await crictl(['start', id], false);
      expect(start.code).to.equal(1);
      expect(start.stderr).to.contain('code = FailedPrecondition');
      expect(start.stderr).to.contain("is not allowed to retrieve the managed password of gMSA DEMO\\\\SqlReporting");
      const status = (await crictlJson(runtime(), ['inspect', id])).status;
      expect([status.state, status.exitCode, status.reason]).to.deep.equal(['CONTAINER_EXITED', 128, 'StartError']);
      expect(status.message).to.contain('ERROR_NO_TRUST_LSA_SECRET');
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal({ files: [], registryValues: [] });
    });

    it('crictl rm and crictl rmp leave no credential spec behind', async () => {
      await crictl(['stopp', podId]);
      await crictl(['rmp', podId]);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal({ files: [], registryValues: [] });
    });
  });

  describe('registry transport (cri-dockerd), --credspec-transport registry', () => {
    let rt: RuntimeHandle | undefined;
    const runtime = (): RuntimeHandle => {
      if (rt === undefined) throw new Error('the runtime is not running (see the before all hook)');
      return rt;
    };
    const crictl = (args: string[]) => runCrictl(runtime(), args);

    before(async function () {
      requireCriTool(this, 'crictl');
      rt = await startRuntime({ name: 'windows-crictl-registry', args: ['--credspec-transport', 'registry'] });
    });
    after(async () => {
      await rt?.stop();
    });

    it('keeps the registry value from create until crictl rm, and passes registry:// to the backend', async () => {
      const logs = join(runtime().dir, 'pod-logs');
      mkdirSync(logs, { recursive: true });
      const security = { run_as_username: 'ContainerAdministrator', credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC };
      const pod = join(runtime().dir, 'pod.json');
      const web = join(runtime().dir, 'web.json');
      writeFileSync(pod, JSON.stringify(windowsPodConfig('webapp-registry', logs, security)));
      writeFileSync(web, JSON.stringify(windowsContainerConfig('iis', IIS, security)));
      await crictl(['pull', IIS]);
      const podId = (await crictl(['runp', pod])).stdout.trim();
      const id = (await crictl(['create', podId, web, pod])).stdout.trim();
      const created = await credentialSpecLeftovers(runtime().stateDir);
      expect(created.files).to.deep.equal([]);
      expect(created.registryValues).to.have.length(1);
      const value = created.registryValues[0]!;
      expect(value).to.match(/^k8s-cred-spec-[0-9a-f]{80}$/);

      await crictl(['start', id]);
      const inspected = await crictlJson(runtime(), ['inspect', id]);
      expect(inspected.info.securityOptions).to.deep.equal([`credentialspec=registry://${value}`]);
      expect(inspected.info.runtimeSpec.windows.credentialSpec.DomainJoinConfig.MachineAccountName).to.equal('WebApplication1');
      expect(inspected.info.runtimeSpec.process.user.username).to.equal('ContainerAdministrator');
      expect(printed((await crictl(['exec', '-s', id, 'whoami'])).stdout)).to.equal('user manager\\containeradministrator\n');
      expect((await credentialSpecLeftovers(runtime().stateDir)).registryValues).to.deep.equal([value]);

      await crictl(['stop', id]);
      await crictl(['rm', id]);
      expect(await credentialSpecLeftovers(runtime().stateDir)).to.deep.equal({ files: [], registryValues: [] });
      await crictl(['rmp', '-f', podId]);
    });
  });
});
