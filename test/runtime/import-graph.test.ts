import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from '../support/paths.js';

/**
 * The runtime's modules import one another without circles, type imports included: a file can be
 * read, tested and moved knowing only what is below it. The emulator is checked with it (the
 * runtime imports it, and it takes types from the runtime), and so is src/tuning. Static
 * `import`/`export … from` of relative paths; the generated proto types import nothing of ours
 * and are left out.
 */
const SOURCE = join(repoRoot, 'src');
const CHECKED = ['runtime', 'emulator', 'tuning'].map((d) => join(SOURCE, d));
const IMPORT = /^(?:import|export)\s[^;]*?\sfrom\s+'(\.[^']+)'/gms;

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The import graph of the checked folders: each file and the checked files it imports. */
function importGraph(): Map<string, string[]> {
  const files = CHECKED.flatMap(sourceFiles);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), (m[1] ?? '').replace(/\.js$/, '.ts')));
    graph.set(file, targets.filter((t) => known.has(t)));
  }
  return graph;
}

/** Strongly connected components of more than one file (Tarjan), or a file importing itself. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.map((f) => relative(SOURCE, f)).sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import graph of src/runtime and src/emulator', () => {
  it('has no circles, counting type imports', () => {
    const graph = importGraph();
    expect(graph.size).to.be.greaterThan(100);
    expect(circles(graph)).to.deep.equal([]);
  });

  it('finds a circle when there is one (the check itself)', () => {
    const a = join(SOURCE, 'runtime', 'a.ts');
    const b = join(SOURCE, 'runtime', 'b.ts');
    const c = join(SOURCE, 'runtime', 'c.ts');
    expect(circles(new Map([[a, [b]], [b, [a, c]], [c, []]]))).to.deep.equal([['runtime/a.ts', 'runtime/b.ts']]);
  });
});
