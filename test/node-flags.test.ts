// Every way cri-winsim starts gives node the same flags (src/node-flags.ts): the command's #!
// line and `npm start` here (the image's entrypoint in compose/compose-file.test.ts), and the
// command run as npm links it (the file itself) really starts node with them.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_FLAGS } from '../src/node-flags.js';
import { cliPath, repoRoot } from './support/paths.js';
import { programFlagsOf } from './support/process.js';
import { startRuntime, type RuntimeHandle } from './support/runtime.js';

const firstLine = (path: string): string => readFileSync(path, 'utf8').split('\n', 1)[0] as string;

describe('node flags of the cri-winsim processes', () => {
  const shebang = `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`;
  let runtime: RuntimeHandle | undefined;

  afterEach(async () => {
    await runtime?.stop();
    runtime = undefined;
  });

  it('collects on the event loop, in a young generation of 4 MiB semi-spaces', () => {
    expect(NODE_FLAGS).to.deep.equal(['--single-threaded-gc', '--max-semi-space-size=4']);
  });

  it('the cri-winsim command (src/cli.ts and its build) passes them on its #! line', () => {
    expect(firstLine(join(repoRoot, 'src', 'cli.ts'))).to.equal(shebang);
    expect(firstLine(cliPath)).to.equal(shebang);
  });

  it('npm start passes them', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).to.include(`node ${NODE_FLAGS.join(' ')} dist/src/cli.js demo`);
  });

  it('run as npm links it (the file itself), the runtime process is node with the flags', async function () {
    runtime = await startRuntime({ name: 'node-flags', command: [cliPath] });
    const flags = programFlagsOf(runtime.pid, cliPath);
    if (flags === undefined) this.skip(); // no procfs (not Linux): the #! line is checked above
    expect(flags).to.deep.equal([...NODE_FLAGS]);
  });
});
