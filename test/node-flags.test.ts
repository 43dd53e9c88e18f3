// Every way cri-winsim starts gives node the same flags (src/tuning/node-flags.ts, written there
// once): the #! line the build writes into dist/src/cli.js (which the image's entrypoint runs,
// compose/compose-file.test.ts), `npm start` and the npm package's command (src/launcher.ts)
// here; and both commands really start node with them.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_FLAGS, nodeFlagsShebang } from '../src/tuning/node-flags.js';
import { cliPath, repoRoot } from './support/paths.js';
import { childrenOf, processRunning, programFlagsOf, runProcess } from './support/process.js';
import { startRuntime, type RuntimeHandle } from './support/runtime.js';

const firstLine = (path: string): string => readFileSync(path, 'utf8').split('\n', 1)[0] as string;
const launcherPath = join(repoRoot, 'dist', 'src', 'launcher.js');

describe('node flags of the cri-winsim processes', () => {
  const shebang = nodeFlagsShebang();
  let runtime: RuntimeHandle | undefined;

  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });

  it('collects on the event loop, in a young generation of 4 MiB semi-spaces', () => {
    expect(NODE_FLAGS).to.deep.equal(['--single-threaded-gc', '--max-semi-space-size=4']);
  });

  it('the build writes them into the #! line of dist/src/cli.js, in place of src/cli.ts\'s plain one', () => {
    expect(shebang).to.equal(`#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
    expect(firstLine(join(repoRoot, 'src', 'cli.ts'))).to.equal('#!/usr/bin/env node');
    expect(firstLine(cliPath)).to.equal(shebang);
  });

  it('npm start runs the launcher, which passes them, and names no flag itself', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).to.include('node dist/src/launcher.js demo');
    for (const flag of NODE_FLAGS) expect(pkg.scripts.start).to.not.include(flag);
  });

  it('run as npm links it (the file itself), the runtime process is node with the flags', async function () {
    runtime = await startRuntime({ name: 'node-flags', command: [cliPath] });
    const flags = programFlagsOf(runtime.pid, cliPath);
    if (flags === undefined) this.skip(); // no procfs (not Linux): the #! line is checked above
    expect(flags).to.deep.equal([...NODE_FLAGS]);
  });

  it('the npm package\'s command (src/launcher.ts) starts with a plain #!/usr/bin/env node', () => {
    // BusyBox's env (Alpine) has no -S: the flags cannot be on the #! line of what npm links.
    expect(firstLine(join(repoRoot, 'src', 'launcher.ts'))).to.equal('#!/usr/bin/env node');
    expect(firstLine(launcherPath)).to.equal('#!/usr/bin/env node');
  });

  it('BusyBox env (Alpine\'s /usr/bin/env) runs the package\'s command and refuses the -S line', async function () {
    const busybox = (process.env.PATH ?? '').split(':').map((d) => join(d, 'busybox')).find((p) => existsSync(p));
    if (busybox === undefined) this.skip(); // Debian package `busybox`
    // The kernel hands env everything after "#!/usr/bin/env " as one argument, then the script.
    const interpreterArgument = (path: string): string => firstLine(path).slice('#!/usr/bin/env '.length);
    const viaLauncher = await runProcess(busybox!, ['env', interpreterArgument(launcherPath), launcherPath, '--version'], { killAfterMs: 30_000 });
    expect(viaLauncher.code, viaLauncher.stderr).to.equal(0);
    expect(viaLauncher.stdout).to.match(/^\d+\.\d+\.\d+\n$/);
    const viaCli = await runProcess(busybox!, ['env', interpreterArgument(cliPath), cliPath, '--version'], { killAfterMs: 30_000 });
    expect(viaCli.code).to.not.equal(0);
    expect(viaCli.stderr).to.include("invalid option -- 'S'");
  });

  it('run as npm links the package\'s command, the runtime is a node child with the flags, stopped by SIGTERM', async function () {
    if (!readdirSync('/proc').includes('self')) this.skip(); // no procfs (not Linux)
    runtime = await startRuntime({ name: 'node-flags-launcher', command: [launcherPath] });
    const children = childrenOf(runtime.pid);
    expect(children, `children of the launcher (pid ${runtime.pid})`).to.have.length(1);
    expect(programFlagsOf(children[0]!, cliPath)).to.deep.equal([...NODE_FLAGS]);
    const handle = runtime;
    runtime = undefined;
    // The launcher forwards SIGTERM; the runtime stops cleanly and the launcher exits as it did.
    const exit = await handle.stop();
    expect(exit.killed, handle.output()).to.equal(false);
    expect(exit.code, handle.output()).to.equal(0);
    expect(exit.socketLeft).to.equal(false);
    expect(processRunning(children[0]!), 'the runtime child still runs').to.equal(false);
  });
});
