// docs/architecture.md is a map for contributors: every path it names must exist, and every
// floor its table lists must have a rule in eslint.config.js that keeps arrows pointing down.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '../support/paths.js';

const pathRoots = ['src/', 'test/', 'docs/', 'proto/', 'bench/', 'examples/', 'scripts/', 'schemas/'];

/** The repository paths a Markdown page names in backticks (`src/cri/server.ts`). */
export function namedPaths(markdown: string): string[] {
  const found = new Set<string>();
  for (const m of markdown.matchAll(/`([^`\s]+)`/g)) {
    const p = m[1]!;
    if (pathRoots.some((root) => p.startsWith(root)) || p === 'eslint.config.js') found.add(p);
  }
  return [...found];
}

describe('docs/architecture.md', () => {
  const page = readFileSync(join(repoRoot, 'docs', 'architecture.md'), 'utf8');

  it('names only paths that exist in the repository', () => {
    const paths = namedPaths(page);
    expect(paths.length, 'paths named').to.be.greaterThan(30);
    const missing = paths.filter((p) => !existsSync(join(repoRoot, p)));
    expect(missing, 'named in docs/architecture.md but absent').to.deep.equal([]);
  });

  it('finds a path that does not exist (the check can fail)', () => {
    const paths = namedPaths('see `src/kubelet/no-such-file.ts` and `npm test`');
    expect(paths).to.deep.equal(['src/kubelet/no-such-file.ts']);
    expect(paths.filter((p) => !existsSync(join(repoRoot, p)))).to.have.length(1);
  });

  it('lists floors that eslint.config.js guards with no-restricted-imports', () => {
    const eslint = readFileSync(join(repoRoot, 'eslint.config.js'), 'utf8');
    const floors = [...page.matchAll(/^\| \w+ \| `(src\/\w+)\/`/gm)].map((m) => m[1]!);
    expect(floors).to.include.members(['src/cri', 'src/kubectl', 'src/kubelet', 'src/apiserver', 'src/runtime', 'src/emulator']);
    for (const floor of floors.filter((f) => f !== 'src/commands')) {
      expect(eslint, `a rule for ${floor}`).to.include(`'${floor}/**/*.ts'`);
    }
  });
});
