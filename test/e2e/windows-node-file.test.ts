// `cri-winsim runtime --node FILE` refuses a node file with errors at start-up: it exits non-zero
// with `<file>: <field>: <reason>` before it listens, and creates neither the socket nor the state
// directory. A valid file (and the embedded default) starts the runtime on that node.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';
import { DEFAULT_NODE_FILE } from '../../src/runtime/windows/default-node.js';
import { cliPath } from '../support/paths.js';
import { startRuntime } from '../support/runtime.js';
import { tempDirPerTest } from '../support/temp-dir.js';

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cri-winsim runtime …` in `dir` and waits for it to exit (killed after 15 s). */
function runRuntimeCommand(dir: string, args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, 'runtime', '--listen', `unix://${join(dir, 'cri.sock')}`, '--state-dir', join(dir, 'state'), ...args], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const node = (change: (n: Record<string, any>) => void): string => {
  const file = structuredClone(DEFAULT_NODE_FILE) as unknown as Record<string, any>;
  change(file);
  return toYaml(file);
};

describe('cri-winsim runtime --node: node files with errors are refused at start-up', function () {
  this.timeout(30_000);
  const dir = tempDirPerTest('cri-winsim-node-');

  const cases: Array<[string, string | undefined, (path: string) => string]> = [
    ['a file that does not exist', undefined, (p) => `${p}: cannot read node file: no such file`],
    ['text that is not YAML', 'node: [\n', (p) => `${p}:2: not valid YAML: `],
    ['a missing required field', 'node:\n  hostname: winnode1\ndomains: []\n', (p) => `${p}: node.name: is required`],
    [
      'a domain SID that is not one',
      node((n) => { n.domains[0].sid = 'S-1-5-21-x'; }),
      (p) => `${p}: domains[0].sid: must match a domain SID (S-1-5-21-a-b-c) (got "S-1-5-21-x")`,
    ],
    [
      'a node joined to a domain the file does not define',
      node((n) => { n.node.domain = 'fabrikam.com'; }),
      (p) => `${p}: node.domain: "fabrikam.com" is not one of the domains defined in domains`,
    ],
    [
      'two domains with one NetBIOS name',
      node((n) => { n.domains.push({ ...structuredClone(n.domains[0]), dnsName: 'other.contoso.com' }); }),
      (p) => `${p}: domains[1].netbiosName: "DEMO" is already defined by domains[0]`,
    ],
  ];

  for (const [what, text, expected] of cases) {
    it(`${what}: exits 1 with the file, the field and the reason, before listening`, async () => {
      const path = join(dir(), 'node.yaml');
      if (text !== undefined) await writeFile(path, text);
      const run = await runRuntimeCommand(dir(), ['--node', path]);
      expect(run.code, run.stderr).to.equal(1);
      const message = run.stderr.trim().split('\n').pop() ?? '';
      expect(message.startsWith(`error: ${expected(path)}`), message).to.equal(true);
      expect(run.stdout + run.stderr).not.to.contain('cri-winsim runtime listening');
      expect(existsSync(join(dir(), 'cri.sock')), 'no socket').to.equal(false);
      expect(existsSync(join(dir(), 'state')), 'no state directory').to.equal(false);
    });
  }

  it('an unknown --ad-mode is refused by the option parser (a usage error: exit 2)', async () => {
    const run = await runRuntimeCommand(dir(), ['--ad-mode', 'lenient']);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.contain("option '--ad-mode <mode>' argument 'lenient' is invalid. Allowed choices are windows-server, gmsa-kep, realistic, strict.");
    expect(existsSync(join(dir(), 'cri.sock'))).to.equal(false);
  });

  it('a valid node file starts the runtime on that node', async () => {
    const ccg = fileURLToPath(new URL('../../../examples/nodes/ccg-workgroup.yaml', import.meta.url));
    const rt = await startRuntime({ name: 'windows-node-file', args: ['--node', ccg, '--ad-mode', 'realistic'] });
    try {
      const ready = rt.output().split('\n').find((l) => l.includes('windows node ready'));
      expect(ready, rt.output()).to.be.a('string');
      expect(JSON.parse(ready!)).to.include({ node: 'WINWORK1', nodeSource: ccg, adMode: 'windows-server', runtimeFlavor: 'dockershim-kep', credentialSpecTransport: 'file' });
    } finally {
      await rt.stop();
    }
  });
});
