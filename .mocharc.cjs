// `npm test`: every test file, in parallel worker processes (one file at a time each). The
// workers keep apart on the loopback by themselves (test/support/worker-slot.ts); suites that use
// the program's own default addresses take turns (test/support/one-worker-at-a-time.ts).
// docs/test-suite.md says what runs where and why.
/* global require, module, __dirname */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- mocha reads its config file with require().
const { availableParallelism } = require('node:os');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { existsSync, readdirSync } = require('node:fs');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { join } = require('node:path');

// The slowest files first (SUITE_TIMES=1 shows them), so that no long file starts last while the
// other workers have run out of files; those that take the default-addresses lock apart from one
// another, so that a worker seldom waits for it. The rest follow in name order.
const FIRST = [
  'package/npm-package',
  'node/node-mode',
  'kubelet/kubelet-cli-kubectl',
  'examples/examples',
  'node/node-informer',
  'e2e/restart',
  'kubelet/kubelet-cli',
  'node/pods-people-bring',
  'e2e/control-plane',
  'e2e/latency-and-faults',
  'compose/compose-services',
  'docs/runnable-blocks',
  'demo/demo',
  'kubelet/static-pods',
].map((name) => `dist/test/${name}.test.js`);

function specFiles() {
  const root = join(__dirname, 'dist', 'test');
  // Before a build there is nothing to order: mocha then says that no test files were found.
  if (!existsSync(root)) return ['dist/test/**/*.test.js'];
  const all = readdirSync(root, { recursive: true })
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => `dist/test/${f.split('\\').join('/')}`)
    .sort();
  return [...FIRST.filter((f) => all.includes(f)), ...all.filter((f) => !FIRST.includes(f))];
}

module.exports = {
  spec: specFiles(),
  require: ['dist/test/support/hooks.js'],
  timeout: 20000,
  exit: false,
  parallel: true,
  // One worker per core, at least two: much of a suite's time is spent waiting on the processes
  // it starts, and a worker waiting for a lock uses no core.
  jobs: Math.max(2, availableParallelism()),
};
