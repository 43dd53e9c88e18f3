import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { redactCredentialSpecs } from '../src/log.js';
import { repoRoot } from './support/paths.js';
import { runProcess } from './support/process.js';

const CENSOR = '[redacted credential spec]';
const SPEC = '{"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"GroupManagedServiceAccounts":[]}}';
const logModule = pathToFileURL(join(repoRoot, 'dist', 'src', 'log.js')).href;

describe('logging (src/log.ts)', () => {
  describe('credential spec redaction', () => {
    it('hands back the very object for a line without a credential spec (no copy)', () => {
      const flat = { containerId: 'c1', podSandboxId: 's1', name: 'web' };
      expect(redactCredentialSpecs(flat)).to.equal(flat);
      const nested: Record<string, unknown> = { req: { config: { windows: { security_context: { run_as_username: 'ContainerUser' } } } }, list: [{ id: 'a' }] };
      expect(redactCredentialSpecs(nested)).to.equal(nested);
    });

    it('censors registry credentials of PullImage in either spelling, and leaves a non-string auth to be walked', () => {
      const line = { req: { image: { image: 'fabrikam.azurecr.io/app:1' }, auth: { username: 'ci', password: 's3cret', auth: 'Y2k6czNjcmV0', identity_token: 't1', registryToken: 't2' } } };
      const out = redactCredentialSpecs(line) as typeof line;
      expect(out.req.auth).to.deep.equal({ username: 'ci', password: '[redacted credential]', auth: '[redacted credential]', identity_token: '[redacted credential]', registryToken: '[redacted credential]' });
      expect(out.req.image).to.equal(line.req.image);
      expect(line.req.auth.password).to.equal('s3cret');
    });

    it('censors the three spellings at the top and nested up to five levels, in objects and arrays', () => {
      const line = {
        credential_spec: SPEC,
        credentialSpec: SPEC,
        gmsaCredentialSpec: SPEC,
        req: { config: { windows: { security_context: { credential_spec: SPEC, run_as_username: 'ContainerUser' } } } },
        pods: [{ spec: { gmsaCredentialSpec: SPEC } }],
        untouched: { id: 'x' },
      };
      const out = redactCredentialSpecs(line) as typeof line;
      expect(out).to.deep.equal({
        credential_spec: CENSOR,
        credentialSpec: CENSOR,
        gmsaCredentialSpec: CENSOR,
        req: { config: { windows: { security_context: { credential_spec: CENSOR, run_as_username: 'ContainerUser' } } } },
        pods: [{ spec: { gmsaCredentialSpec: CENSOR } }],
        untouched: { id: 'x' },
      });
      expect(JSON.stringify(out)).to.not.contain('CmsPlugins');
      // The caller's object is left as it was; what holds no spec is shared.
      expect(line.req.config.windows.security_context.credential_spec).to.equal(SPEC);
      expect(line.pods[0]?.spec.gmsaCredentialSpec).to.equal(SPEC);
      expect(out.untouched).to.equal(line.untouched);
    });

    it('keeps an Error an Error (message and stack) while censoring a spec it carries', () => {
      const err = Object.assign(new Error('HCS refused the credential spec'), { credential_spec: SPEC });
      const out = redactCredentialSpecs({ err }) as { err: Error & { credential_spec: string } };
      expect(out.err).to.be.instanceOf(Error);
      expect(out.err.message).to.equal('HCS refused the credential spec');
      expect(out.err.stack).to.equal(err.stack);
      expect(out.err.credential_spec).to.equal(CENSOR);
      expect(err.credential_spec).to.equal(SPEC);
    });

    it('stops at its depth on a cycle', () => {
      const cyclic: Record<string, unknown> = { id: 'a' };
      cyclic['self'] = cyclic;
      expect(redactCredentialSpecs(cyclic)).to.equal(cyclic);
    });
  });

  describe('the batched logger (the runtime\'s)', () => {
    const script = (body: string): string => `
      const { createLogger } = await import(${JSON.stringify(logModule)});
      const logger = createLogger({ level: 'info', name: 'cri-winsim', batch: true, pretty: false });
      ${body}`;
    const lines = (stderr: string) => stderr.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

    for (const [how, ending] of [['exits by itself', ''], ['calls process.exit', 'process.exit(0);']] as const) {
      it(`writes every line in order, redacted, when the process ${how} right after logging`, async () => {
        // 3,000 lines: many batches, and a last one below the batch size still waiting at exit.
        const result = await runProcess(
          process.execPath,
          ['--input-type=module', '-e', script(`
            for (let i = 0; i < 3000; i++) logger.info({ i, credential_spec: ${JSON.stringify(SPEC)} }, 'line');
            ${ending}`)],
          { killAfterMs: 20_000 },
        );
        expect(result.code, result.stderr.slice(-500)).to.equal(0);
        const seen = lines(result.stderr);
        expect(seen.map((l) => l['i'])).to.deep.equal(Array.from({ length: 3000 }, (_, i) => i));
        expect(new Set(seen.map((l) => l['credential_spec']))).to.deep.equal(new Set([CENSOR]));
        expect(seen[0]).to.include({ level: 'info', name: 'cri-winsim', msg: 'line' });
      });
    }

    it('hands a full batch on after the turn that filled it, not inside the logging call', async () => {
      // sonic-boom writes through fs.write: count its calls, and note the turn each came in.
      const result = await runProcess(
        process.execPath,
        ['--input-type=module', '-e', script(`
          const fs = (await import('node:fs')).default;
          const write = fs.write;
          let turn = 0;
          const writes = [];
          fs.write = function (...args) { writes.push(turn); return write.apply(this, args); };
          for (let i = 0; i < 40; i++) logger.info({ i, pad: 'x'.repeat(200) }, 'line');
          const during = writes.length;
          setImmediate(() => { turn = 1; setImmediate(() => { turn = 2; setImmediate(() => {
            process.stdout.write(JSON.stringify({ during, writes }));
          }); }); });`)],
        { killAfterMs: 20_000 },
      );
      expect(result.code, result.stderr.slice(-500)).to.equal(0);
      const { during, writes } = JSON.parse(result.stdout) as { during: number; writes: number[] };
      // Over 8 KB of lines: the batch was full during the loop, and went out two turns later.
      expect(during).to.equal(0);
      expect(writes[0]).to.equal(1);
      expect(lines(result.stderr).map((l) => l['i'])).to.deep.equal(Array.from({ length: 40 }, (_, i) => i));
    });

    it('writes a lone line while the process keeps running (no exit needed)', async () => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script(`
        logger.info({ containerId: 'c1' }, 'container started');
        setInterval(() => {}, 1000);`)], { stdio: ['ignore', 'ignore', 'pipe'] });
      try {
        const line = await new Promise<string>((resolve, reject) => {
          let stderr = '';
          const timer = setTimeout(() => reject(new Error(`no line within 10 s; stderr: ${stderr}`)), 10_000);
          child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
            stderr += chunk;
            if (stderr.includes('\n')) {
              clearTimeout(timer);
              resolve(stderr);
            }
          });
        });
        expect(lines(line)).to.have.length(1);
        expect(lines(line)[0]).to.include({ containerId: 'c1', msg: 'container started' });
      } finally {
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('close', resolve));
      }
    });
  });
});
