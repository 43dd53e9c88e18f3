import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createWindowsContainer,
  execSync,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  removeAllPods,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
  writeNodeFile,
  type InProcessRuntime,
} from '../e2e/windows-support.js';
import { unaryCall } from '../../src/cri/proto.js';
import type { RuntimeContext } from '../../src/runtime/runtime-context.js';

/**
 * Two runtimes in one process (node mode runs many) share nothing but immutable tables: each has
 * its own command registry, its own simulated node and AD answers, its own stores and caches.
 */
describe('two runtimes in one process', function () {
  this.timeout(60_000);
  let nodesDir = '';
  let a: InProcessRuntime | undefined;
  let b: InProcessRuntime | undefined;

  before(async () => {
    nodesDir = await mkdtemp(join(tmpdir(), 'cri-winsim-two-'));
    // The same node and domain as the embedded WINNODE1, except that no domain controller answers.
    const dcDown = await writeNodeFile(nodesDir, 'dc-down.yaml', (n) => {
      for (const dc of n.domains[0]!.domainControllers) dc.reachable = false;
    });
    a = await startInProcessRuntime({ adMode: 'realistic' });
    b = await startInProcessRuntime({ adMode: 'realistic', nodeFile: dcDown });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    for (const rt of [a, b]) if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
    if (nodesDir !== '') await rm(nodesDir, { recursive: true, force: true });
  });

  /** A started gMSA container (the KEP's credential spec) on `rt`, run as NETWORK SERVICE (it acts as the gMSA on the network). */
  async function gmsaContainer(rt: InProcessRuntime, name: string): Promise<string> {
    const security = { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, run_as_username: 'NT AUTHORITY\\NETWORK SERVICE' };
    const pod = windowsPodConfig(name, join(rt.dir, 'pods'), security);
    const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, security));
    await unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 });
    return containerId;
  }

  const run = async (rt: InProcessRuntime, id: string, cmd: string[]) => {
    const r = await execSync(rt.cri, id, cmd);
    return { exitCode: r.exitCode, output: (r.stdout + r.stderr).replace(/\r\n/g, '\n').trim() };
  };

  it('each answers ExecSync from its own node file: whoami /upn and nltest /query', async () => {
    const inA = await gmsaContainer(a!, 'web-a');
    const inB = await gmsaContainer(b!, 'web-b');
    // Texts: src/runtime/windows/identity-commands.ts (Windows' whoami and nltest wording).
    expect(await run(a!, inA, ['whoami', '/upn'])).to.deep.equal({ exitCode: 0, output: 'WebApplication1$@contoso.com' });
    expect(await run(b!, inB, ['whoami', '/upn'])).to.deep.equal({
      exitCode: 1,
      output: 'ERROR: Unable to get User Principal Name (UPN) as the current logged-on user is not a domain user.',
    });
    expect((await run(a!, inA, ['nltest', '/query'])).output).to.contain('Connection Status = 0 0x0 NERR_Success');
    expect((await run(b!, inB, ['nltest', '/query'])).output).to.contain('Connection Status = 1311 0x51f ERROR_NO_LOGON_SERVERS');
    // A's answers again after B's: nothing B decided stayed behind for A.
    expect(await run(a!, inA, ['whoami', '/upn'])).to.deep.equal({ exitCode: 0, output: 'WebApplication1$@contoso.com' });
    await removeAllPods(a!.cri);
    await removeAllPods(b!.cri);
  });

  it('a command registered in one runtime is not known to the other', async () => {
    a!.runtime.context.commands.register('only-in-a', (ctx) => {
      ctx.stdout('from a\n');
      return 0;
    });
    const inA = await gmsaContainer(a!, 'cmd-a');
    const inB = await gmsaContainer(b!, 'cmd-b');
    expect(await run(a!, inA, ['only-in-a'])).to.deep.equal({ exitCode: 0, output: 'from a' });
    expect(b!.runtime.context.commands.lookup('only-in-a')).to.equal(undefined);
    const inB2 = await run(b!, inB, ['cmd', '/c', 'only-in-a']).catch((err: Error) => ({ exitCode: -1, output: err.message }));
    expect(inB2.output).to.not.contain('from a');
    expect(inB2.exitCode).to.not.equal(0);
    await removeAllPods(a!.cri);
    await removeAllPods(b!.cri);
  });

  it('the started identity of a container is kept by its own runtime only', async () => {
    const inA = await gmsaContainer(a!, 'id-a');
    const record = a!.runtime.context.containers.get(inA)!;
    expect(a!.runtime.context.windows.identities.peek(record)?.identity.userName).to.equal('NETWORK SERVICE');
    expect(b!.runtime.context.windows.identities.peek(record)).to.equal(undefined);
    expect(b!.runtime.context.containers.get(inA)).to.equal(undefined);
    await removeAllPods(a!.cri);
  });

  it('holds every mutable part of its own: stores, caches, queues, buffers, registries', () => {
    const ca: RuntimeContext = a!.runtime.context;
    const cb: RuntimeContext = b!.runtime.context;
    const parts = (c: RuntimeContext): Record<string, unknown> => ({
      commands: c.commands,
      sandboxes: c.sandboxes,
      containers: c.containers,
      images: c.images,
      tidyUp: c.load.tidyUp,
      load: c.load,
      random: c.random,
      logFiles: c.logFiles,
      logTimestamps: c.logFiles.timestamps,
      windowsNode: c.windows.node,
      credentialSpecs: c.windows.credentialSpecs,
      accessChecks: c.windows.accessChecks,
      identities: c.windows.identities,
      fileReader: c.windows.fileReader,
      handoff: c.windows.handoff,
    });
    const pa = parts(ca);
    const pb = parts(cb);
    for (const name of Object.keys(pa)) expect(pa[name], name).to.not.equal(pb[name]);
  });
});
