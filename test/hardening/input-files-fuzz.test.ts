// Fuzzing the files a user hands the simulator: pod YAML (the fake kubelet's manifest loader),
// node files (--node) and, through the kubelet and the runtime processes, a few of each end to
// end. Inputs are random text, the bundled examples with random edits, and the examples with a
// random value put at a random path (fast-check's anything: deep objects, huge strings, numbers
// where strings belong). Expected: a clear error naming the file (and the document or field),
// never a JavaScript exception, a stack trace or a hang.
import { expect } from 'chai';
import fc from 'fast-check';
import { readFileSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { loadPodManifest, ManifestError } from '../../src/apiserver/manifests.js';
import { RuntimeError } from '../../src/runtime/errors.js';
import { DEFAULT_NODE_FILE } from '../../src/runtime/windows/default-node.js';
import { parseNodeFile } from '../../src/runtime/windows/node-directory.js';
import { MAX_YAML_NESTING, yamlNestingDepth } from '../../src/yaml-nesting.js';
import { runKubelet } from '../kubelet/support/kubelet-cli.js';
import { repoRoot, cliPath } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { tempDirPerTest } from '../support/temp-dir.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { fcParameters } from './support.js';

const EXCEPTION_TEXT = /TypeError|RangeError|ReferenceError|is not a function|Cannot read propert|undefined \(reading|Maximum call stack|\n\s+at .+:\d+:\d+/;

const podExamples = readdirSync(join(repoRoot, 'examples', 'pods')).map((f) => readFileSync(join(repoRoot, 'examples', 'pods', f), 'utf8'));
const nodeExamples = [toYaml(DEFAULT_NODE_FILE), ...readdirSync(join(repoRoot, 'examples', 'nodes')).map((f) => readFileSync(join(repoRoot, 'examples', 'nodes', f), 'utf8'))];

/** A text with random edits: deleted ranges, inserted text, a duplicated line. */
function editedText(texts: string[]): fc.Arbitrary<string> {
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 40 }) }),
    fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom(': ', '\n- ', '{', '[', '"', '*a', '&a ', '!!binary ', '\t', '\n---\n', '\u0000', '\ud800')) }),
    fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat() }),
  );
  return fc.tuple(fc.constantFrom(...texts), fc.array(edit, { minLength: 1, maxLength: 5 })).map(([base, edits]) => {
    let text = base;
    for (const e of edits) {
      const at = text.length === 0 ? 0 : e.at % text.length;
      if (e.kind === 'delete') text = text.slice(0, at) + text.slice(at + e.length);
      else if (e.kind === 'insert') text = text.slice(0, at) + e.text + text.slice(at);
      else {
        const lines = text.split('\n');
        const i = lines.length === 0 ? 0 : e.at % lines.length;
        lines.splice(i, 0, lines[i] ?? '');
        text = lines.join('\n');
      }
    }
    return text;
  });
}

/** Every path of objects and arrays in a parsed document (bounded). */
function paths(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  if (out.length > 400 || value === null || typeof value !== 'object') return out;
  for (const [key, child] of Object.entries(value)) {
    const path = [...prefix, Array.isArray(value) ? Number(key) : key];
    out.push(path);
    paths(child, path, out);
  }
  return out;
}

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 3 }),
  fc.constantFrom(null, '', 'x'.repeat(1 << 20), -1, 1e308, Number.MAX_SAFE_INTEGER + 2, true, [], {}),
  fc.constant(Array.from({ length: 3000 }, (_, i) => ({ name: `n${i}` }))),
  fc.integer({ min: 100, max: 2000 }).map((depth) => JSON.parse(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`) as unknown),
);

/** A parsed example with one value replaced by an odd one, as YAML. */
function replacedValue(texts: string[]): fc.Arbitrary<string> {
  return fc.tuple(fc.constantFrom(...texts), fc.nat(), oddValue).map(([text, n, value]) => {
    const doc = parseYaml(text.split('\n---')[0] ?? text) as unknown;
    const all = paths(doc);
    if (all.length === 0) return toYaml(value);
    const path = all[n % all.length]!;
    let parent = doc as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[path[path.length - 1]!] = value;
    try {
      return toYaml(doc, { aliasDuplicateObjects: false });
    } catch {
      // Too deep for the YAML writer itself: JSON is YAML too.
      return JSON.stringify(doc);
    }
  });
}

const specialTexts = fc.constantFrom(
  '',
  '---\n---\n',
  '[' .repeat(10000),
  '- '.repeat(5000),
  // A "billion laughs" of aliases.
  `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n`,
  'apiVersion: v1\nkind: Pod\nmetadata: !!binary aGVsbG8=\n',
  '\ufeff\u0000\u0001',
);

const fileText = (examples: string[]) => fc.oneof(
  { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
  { arbitrary: specialTexts, weight: 1 },
  { arbitrary: editedText(examples), weight: 3 },
  { arbitrary: replacedValue(examples), weight: 3 },
);

describe('hardening: pod YAML and node files fuzzed', function () {
  this.timeout(180_000);

  it('the pod manifest loader answers every text with pods or errors that name the file', () => {
    fc.assert(
      fc.property(fileText(podExamples), (text) => {
        let result;
        try {
          result = loadPodManifest('fuzz/pod.yaml', text);
        } catch (err) {
          throw new Error(`loadPodManifest threw ${(err as Error).name}: ${(err as Error).message}`, { cause: err });
        }
        for (const e of result.errors) {
          expect(e).to.be.instanceOf(ManifestError);
          expect(e.message).to.match(/^fuzz\/pod\.yaml: document \d+: ./);
          expect(e.message).to.not.match(EXCEPTION_TEXT);
        }
      }),
      fcParameters(80),
    );
  });

  it('the node file parser answers every text with a node or an InvalidArgument that names the file', () => {
    fc.assert(
      fc.property(fileText(nodeExamples), (text) => {
        try {
          parseNodeFile(text, 'fuzz/node.yaml');
        } catch (err) {
          expect(err, `${(err as Error).name}: ${(err as Error).message}`).to.be.instanceOf(RuntimeError);
          expect((err as RuntimeError).code).to.equal('InvalidArgument');
          expect((err as Error).message).to.match(/^fuzz\/node\.yaml(:\d+)?: ./);
          expect((err as Error).message).to.not.match(EXCEPTION_TEXT);
        }
      }),
      fcParameters(80),
    );
  });

  describe('end to end', () => {
    const dir = tempDirPerTest('cri-winsim-hardening-');

    it('cri-winsim runtime --node with fuzzed node files exits 1 with one line naming the file, no stack', async () => {
      const samples = fc.sample(fileText(nodeExamples).filter((t) => {
        try {
          parseNodeFile(t, 'x');
          return false;
        } catch {
          return true;
        }
      }), { numRuns: 2, seed: 22 });
      for (const [i, text] of samples.entries()) {
        const file = join(dir(), `node-${i}.yaml`);
        await writeFile(file, text);
        const { code, stderr } = await runProcess(process.execPath, [
          cliPath, 'runtime', '--listen', `unix://${join(dir(), `rt-${i}.sock`)}`, '--state-dir', join(dir(), `state-${i}`), '--node', file,
        ], { killAfterMs: 30_000 });
        expect(code, stderr).to.equal(1);
        expect(stderr).to.include(file);
        expect(stderr).to.not.match(EXCEPTION_TEXT);
      }
    });

    let rt: RuntimeHandle | undefined;
    before(async () => {
      rt = await startRuntime({ name: 'hardening-kubelet-files' });
    });
    after(async () => {
      await rt?.stop();
    });

    it('cri-winsim kubelet run with fuzzed pod files exits 1 naming the file, no stack', async () => {
      const samples = fc.sample(fileText(podExamples).filter((t) => loadPodManifest('x', t).errors.length > 0), { numRuns: 2, seed: 22 });
      for (const [i, text] of samples.entries()) {
        const file = join(dir(), `pod-${i}.yaml`);
        await writeFile(file, text);
        const { code, stderr } = await runKubelet([
          'run', file, '--cluster', join(repoRoot, 'examples', 'cluster'), '--container-runtime-endpoint', rt!.endpoint,
        ]);
        expect(code, stderr).to.equal(1);
        expect(stderr).to.include(file);
        expect(stderr).to.not.match(EXCEPTION_TEXT);
      }
    });
  });
});

describe('hardening: deeply nested YAML is refused before the parser', function () {
  this.timeout(60_000);

  it('estimates block, dash and flow nesting', () => {
    expect(yamlNestingDepth('a: 1\n')).to.equal(1);
    expect(yamlNestingDepth('a:\n  b:\n    c: [1, {d: 2}]\n')).to.equal(5);
    expect(yamlNestingDepth('- - - x\n')).to.equal(4);
    expect(yamlNestingDepth('a: "[[[[" # {{{{\nb: \'[\'\n')).to.equal(1);
    expect(yamlNestingDepth('['.repeat(5000))).to.equal(5001);
    for (const text of podExamples) expect(yamlNestingDepth(text)).to.be.below(20);
  });

  it(`refuses a pod manifest nested over ${MAX_YAML_NESTING} levels with an error naming the file`, () => {
    const { pods, errors } = loadPodManifest('deep.yaml', '- '.repeat(5000));
    expect(pods).to.deep.equal([]);
    expect(errors.map((e) => e.message)).to.deep.equal([`deep.yaml: document 1: invalid YAML: nested more than ${MAX_YAML_NESTING} levels deep`]);
  });

  it(`refuses a node file nested over ${MAX_YAML_NESTING} levels with InvalidArgument naming the file`, () => {
    expect(() => parseNodeFile(`{"node":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}`, 'deep-node.yaml'))
      .to.throw(RuntimeError, `deep-node.yaml: not valid YAML: nested more than ${MAX_YAML_NESTING} levels deep`);
  });

  it('refuses an alias bomb in a pod manifest and a node file with a clear error, not a ReferenceError', () => {
    const bomb = `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n`;
    expect(loadPodManifest('bomb.yaml', bomb).errors.map((e) => e.message))
      .to.deep.equal(['bomb.yaml: document 1: invalid YAML: Excessive alias count indicates a resource exhaustion attack']);
    expect(() => parseNodeFile(bomb, 'bomb-node.yaml'))
      .to.throw(RuntimeError, 'bomb-node.yaml: not valid YAML: Excessive alias count indicates a resource exhaustion attack');
  });

  it('does not abort the process on a deep pod manifest followed by a deep node file', async () => {
    // Before the guard this sequence ended the process with V8's "RegExpCompiler Allocation
    // failed - process out of memory": the yaml parser ran out of stack while V8 compiled one of
    // its regular expressions. A fresh process, as a user's `cri-winsim` command would be.
    const script = [
      `const { loadPodManifest } = await import(${JSON.stringify(join(repoRoot, 'dist', 'src', 'apiserver', 'manifests.js'))});`,
      `const { parseNodeFile } = await import(${JSON.stringify(join(repoRoot, 'dist', 'src', 'runtime', 'windows', 'node-directory.js'))});`,
      `console.log(loadPodManifest('f.yaml', '- '.repeat(5000)).errors[0].message);`,
      `try { parseNodeFile('{"node":' + '{"a":'.repeat(3000) + '1' + '}'.repeat(3000) + '}', 'n.yaml'); } catch (e) { console.log(e.message); }`,
    ].join('\n');
    const { code, stdout, stderr } = await runProcess(process.execPath, ['--input-type=module', '-e', script], { killAfterMs: 30_000 });
    expect(code, stderr).to.equal(0);
    expect(stdout.trim().split('\n')).to.deep.equal([
      `f.yaml: document 1: invalid YAML: nested more than ${MAX_YAML_NESTING} levels deep`,
      `n.yaml: not valid YAML: nested more than ${MAX_YAML_NESTING} levels deep`,
    ]);
  });
});
