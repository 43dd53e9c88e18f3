#!/usr/bin/env node
/**
 * `npm test`'s pretest: the proto types are generated, then the build (tsc), the lint (eslint)
 * and the pinned tools' check (scripts/install-tools.mjs) run side by side. tsc and
 * typescript-eslint each type-check the whole tree on one core (the lint builds a program of its
 * own: it cannot reuse the compiler's), and the tools' check downloads or compiles; one after the
 * other they left a core of a 2-core machine idle for most of the pretest (docs/test-suite.md).
 * Both read the generated types, hence the generation first.
 *
 * The tools' check prints as it goes (a fresh machine compiles for minutes); the build's and the
 * lint's output is printed whole when each ends. The pretest fails when one of them fails, once
 * all three have ended, so that nothing is left running.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs a step; resolves with its exit code (1 when it could not start). */
function run(name, command, args, { buffered }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', buffered ? 'pipe' : 'inherit', buffered ? 'pipe' : 'inherit'] });
    const chunks = [];
    child.stdout?.on('data', (c) => chunks.push({ to: process.stdout, c }));
    child.stderr?.on('data', (c) => chunks.push({ to: process.stderr, c }));
    child.once('error', (err) => {
      process.stderr.write(`pretest: ${name}: cannot start ${command}: ${err.message}\n`);
      resolve(1);
    });
    child.once('close', (code, signal) => {
      for (const { to, c } of chunks) to.write(c);
      if (code !== 0) process.stderr.write(`pretest: ${name} failed (${signal ?? `exit ${code}`})\n`);
      resolve(code ?? 1);
    });
  });
}

const gen = await run('proto types', npm, ['run', 'gen', '--silent'], { buffered: false });
if (gen !== 0) process.exit(gen);
const codes = await Promise.all([
  run('build', npm, ['run', 'compile', '--silent'], { buffered: true }),
  run('lint', npm, ['run', 'lint', '--silent'], { buffered: true }),
  run('tools', process.execPath, [join('scripts', 'install-tools.mjs')], { buffered: false }),
]);
process.exitCode = codes.find((code) => code !== 0) ?? 0;
