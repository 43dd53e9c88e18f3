// docs/failure-modes.md quotes the simulator's texts; this recomputes each of them from the
// runtime code and fails when the page and the code disagree.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { START_ERROR_EXIT_CODE, START_ERROR_REASON } from '../../src/runtime/container-start.js';
import { parseCredentialSpec } from '../../src/runtime/windows/credential-spec.js';
import { repoRoot } from '../support/paths.js';
import { evaluateScenario, exampleCredentialSpec, SCENARIOS } from './failure-scenarios.js';

const page = readFileSync(join(repoRoot, 'docs', 'failure-modes.md'), 'utf8');

const GRPC_NAME: Record<string, string> = { FailedPrecondition: 'FAILED_PRECONDITION', Unknown: 'UNKNOWN', InvalidArgument: 'INVALID_ARGUMENT' };

/** The section of the page that starts at the anchor `id` (up to the next `## `). */
function section(id: string): string {
  const start = page.indexOf(`<a id="${id}"></a>`);
  if (start < 0) throw new Error(`docs/failure-modes.md has no section with <a id="${id}"></a>`);
  const next = page.indexOf('\n## ', start);
  return page.slice(start, next < 0 ? undefined : next);
}

/** The fenced code blocks of a piece of markdown, as their text. */
function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```[a-z]*\n([\s\S]*?)\n```$/gm)].map((m) => m[1]!);
}

function errorMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected an error');
}

describe('docs/failure-modes.md', function () {
  for (const scenario of SCENARIOS) {
    describe(scenario.title, function () {
      for (const mode of ['strict', 'realistic'] as const) {
        it(`quotes what --ad-mode ${mode} produces`, function () {
          const text = section(scenario.key);
          const { decision, transcript } = evaluateScenario(scenario, mode);
          const blocks = codeBlocks(text);
          const e = decision.startError;
          if (e !== undefined) {
            expect(blocks, `the start error of ${mode} mode in a code block`).to.include(e.message);
            expect(text).to.include(`gRPC status \`${GRPC_NAME[e.code]}\``);
            // The summary table row for this cause names the same status.
            const row = page.split('\n').find((l) => l.includes(`](#${scenario.key})`));
            expect(row, `summary row for #${scenario.key}`).to.include(`\`${GRPC_NAME[e.code]}\``);
          } else {
            expect(blocks, `the identity command transcript of ${mode} mode`).to.include(transcript);
            // The summary's nltest /query column quotes the transcript's status line.
            const row = page.split('\n').find((l) => l.includes(`](#${scenario.key})`)) ?? '';
            const cell = /`((?:Connection Status|I_NetLogonControl failed)[^`]*)`/.exec(row)?.[1];
            expect(cell, `nltest /query cell of the summary row for #${scenario.key}`).to.be.a('string');
            expect(transcript).to.include(cell!);
          }
        });
      }
    });
  }

  it('states the container status of a failed start as the start path records it', function () {
    expect(page).to.include(`\`CONTAINER_EXITED\` with exit code ${START_ERROR_EXIT_CODE}, reason \`${START_ERROR_REASON}\``);
    for (const s of SCENARIOS) {
      const e = evaluateScenario(s, 'strict').decision.startError;
      if (e !== undefined) expect(section(s.key)).to.include(`exit code ${START_ERROR_EXIT_CODE}, reason \`${START_ERROR_REASON}\``);
    }
  });

  it('docs/crictl.md quotes the strict-mode start error as crictl prints it', function () {
    const crictlPage = readFileSync(join(repoRoot, 'docs', 'crictl.md'), 'utf8');
    const notAllowed = SCENARIOS.find((s) => s.key === 'node-not-allowed')!;
    const e = evaluateScenario(notAllowed, 'strict').decision.startError!;
    expect(crictlPage).to.include(`rpc error: code = FailedPrecondition desc = ${e.message}`);
    expect(crictlPage).to.include(`exit code ${START_ERROR_EXIT_CODE} and reason \`${START_ERROR_REASON}\``);
  });

  it('quotes the invalid credential spec errors as the parser words them', function () {
    const invalid = exampleCredentialSpec('invalid-webapplication1');
    const text = section('invalid-credential-spec');
    expect(codeBlocks(text)).to.include(errorMessage(() => parseCredentialSpec(JSON.stringify(invalid))));
    expect(text).to.include(`\`${errorMessage(() => parseCredentialSpec(''))}\``);
    expect(text).to.include(`\`${errorMessage(() => parseCredentialSpec('x'.repeat(70_000)))}\``);
  });

  it('lists hand-off errors whose fixed text is in security-options.ts', function () {
    const source = readFileSync(join(repoRoot, 'src', 'runtime', 'windows', 'security-options.ts'), 'utf8');
    const start = page.indexOf('## Errors of the credential spec hand-off');
    expect(start).to.be.greaterThan(0);
    const bullets = page.slice(start).split('\n').filter((l) => l.startsWith('- `')).map((l) => l.slice(3, l.lastIndexOf('`')));
    expect(bullets).to.have.length(7);
    for (const bullet of bullets) {
      // The text up to the first placeholder is fixed; it must be the code's, word for word.
      const fixed = bullet.split(/[<"]/)[0]!;
      expect(fixed.length, bullet).to.be.greaterThan(10);
      expect(source, bullet).to.include(fixed);
    }
  });
});
