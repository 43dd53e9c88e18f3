// `npm test`: every test file, in parallel worker processes (one file at a time each). The
// workers keep apart on the loopback by themselves (test/support/worker-slot.ts); suites that use
// the program's own default addresses take turns (test/support/one-worker-at-a-time.ts).
// docs/test-suite.md says what runs where and why.
/* global require, module */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- mocha reads its config file with require().
const { availableParallelism } = require('node:os');

module.exports = {
  spec: ['dist/test/**/*.test.js'],
  require: ['dist/test/support/hooks.js'],
  timeout: 20000,
  exit: false,
  recursive: true,
  parallel: true,
  // One worker per core, at least two: much of a suite's time is spent waiting on the processes
  // it starts, and a worker waiting for a lock uses no core.
  jobs: Math.max(2, availableParallelism()),
};
