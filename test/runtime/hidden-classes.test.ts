import { expect } from 'chai';
import { repoRoot } from '../support/paths.js';
import { runProcess } from '../support/process.js';

/**
 * The objects the runtime makes per pod share their hidden classes (V8's shapes) from one pod to
 * the next and stay fast objects. A spread that adds keys, or an object literal with a getter,
 * gives each object a class or a dictionary of its own; on the lifecycle path that made most of
 * what the runtime's scavenges promoted. Checked with V8's own %HaveSameMap and
 * %HasFastProperties, which need --allow-natives-syntax: the pods run in a child process.
 */
describe('hidden classes of per-pod objects', () => {
  it('are shared by the sandboxes, containers and execution targets of two pods', async function () {
    this.timeout(30_000);
    const dist = (path: string): string => JSON.stringify(new URL(`dist/${path}`, `file://${repoRoot}`).href);
    const script = `
      import { openRuntime, pull, runSandbox, createContainer, BUSYBOX } from ${dist('test/runtime/helpers.js')};
      import { executionTarget } from ${dist('src/runtime/container-process.js')};
      const fixture = await openRuntime();
      try {
        const { runtime } = fixture;
        const ctx = runtime.context;
        await pull(runtime, BUSYBOX);
        const pods = [];
        for (let i = 0; i < 2; i++) {
          const sandbox = await runSandbox(runtime, { annotations: { 'example.com/owner': 'team-' + i } });
          const id = await createContainer(runtime, sandbox, { annotations: { 'example.com/build': String(i) }, command: ['sleep', '3600'] });
          await runtime.startContainer({ container_id: id });
          pods.push({ sandbox: ctx.sandboxes.get(sandbox.id), container: ctx.containers.get(id) });
        }
        const [a, b] = pods;
        const same = (x, y) => %HaveSameMap(x, y) && %HasFastProperties(x) && %HasFastProperties(y);
        console.log(JSON.stringify({
          sandboxAnnotations: same(a.sandbox.ociSpec.annotations, b.sandbox.ociSpec.annotations),
          containerAnnotations: same(ctx.containers.specOf(a.container).annotations, ctx.containers.specOf(b.container).annotations),
          executionTarget: same(executionTarget(ctx, a.container), executionTarget(ctx, b.container)),
          targetPlatform: same(executionTarget(ctx, a.container).platform, executionTarget(ctx, b.container).platform),
        }));
      } finally {
        await fixture.close();
      }`;
    const result = await runProcess(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { killAfterMs: 25_000 });
    expect(result.code, result.stderr).to.equal(0);
    expect(JSON.parse(result.stdout)).to.deep.equal({ sandboxAnnotations: true, containerAnnotations: true, executionTarget: true, targetPlatform: true });
  });
});
