// Where the end-to-end suites find the project's CLI and the cri-tools binaries.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is compiled to dist/test/support/). */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The compiled CLI entry, `cri-winsim`. */
export const cliPath = join(repoRoot, 'dist', 'src', 'cli.js');

/** Where scripts/install-tools.mjs puts crictl and critest. */
export const toolsBinDir = join(repoRoot, '.tools', 'bin');

export type CriTool = 'crictl' | 'critest';

/** Absolute path of an installed cri-tools binary, or undefined when it was not built. */
export function criToolPath(tool: CriTool): string | undefined {
  const p = join(toolsBinDir, tool);
  return existsSync(p) ? p : undefined;
}

/**
 * The binary a suite needs. Outside CI a missing binary skips the suite with a message that
 * says what is skipped and why; in CI (CI=true) it is a failure, because CI must run them.
 */
export function requireCriTool(ctx: Mocha.Context, tool: CriTool): string {
  const p = criToolPath(tool);
  if (p) return p;
  const why = `${tool} is not installed in .tools/bin (run \`node scripts/install-tools.mjs\`; it needs Go)`;
  if (process.env.CI === 'true') throw new Error(`${why}; CI must run the ${tool} suite`);
  process.stderr.write(`    skipping the ${tool} end-to-end suite: ${why}\n`);
  ctx.skip();
}
