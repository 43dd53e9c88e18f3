/**
 * Checks of V8's internals behind the tuning tricks (src/tuning), asked of V8 itself with its
 * natives syntax (%HaveSameMap, %HasFastProperties, %GetOptimizationStatus; node
 * --allow-natives-syntax, in child processes). They pin how V8 treats our objects, not behaviour
 * users see, and depend on the V8 version, so they are a bench check (`npm run bench:v8`), not part
 * of `npm test`: after a Node upgrade a failure here says a trick's figure in bench/README.md
 * ("Tuning tricks") must be measured again. Exit code 1 when a check fails.
 */
import { repoRoot } from '../test/support/paths.js';
import { runProcess } from '../test/support/process.js';

interface Check {
  name: string;
  /** Module code run with --allow-natives-syntax; prints one JSON line. */
  script: string;
  /** What the JSON line must equal. */
  expected: unknown;
}

const dist = (path: string): string => JSON.stringify(new URL(`dist/${path}`, `file://${repoRoot}`).href);

/**
 * merged/copied (src/tuning/merged.ts): every result of the same shapes shares one hidden class
 * and stays a fast object, where `{ ...a, k: v }` made a class per evaluation (Node 20, V8 11.3).
 */
const mergedShapes: Check = {
  name: 'merged and copied give results of the same shapes one shared hidden class',
  script: `
    import { copied, merged } from ${dist('src/tuning/merged.js')};
    const make = (i) => ({ 'kubernetes.io/config.source': 'bench', 'io.kubernetes.pod.uid': 'u' + i });
    const shared = (f) => { const first = f(0); for (let i = 1; i < 50; i++) if (!%HaveSameMap(first, f(i))) return false; return %HasFastProperties(first); };
    console.log(JSON.stringify({
      merged: shared((i) => merged(make(i), { 'io.kubernetes.cri.sandbox-id': 'id' + i })),
      copied: shared((i) => { const c = copied(make(i)); c.uid = i; return c; }),
    }));`,
  expected: { merged: true, copied: true },
};

/**
 * The objects the runtime makes per pod share their hidden classes from one pod to the next and
 * stay fast objects: a spread that adds keys, or an object literal with a getter, gave each object
 * a class or a dictionary of its own, most of what the runtime's scavenges promoted.
 */
const perPodShapes: Check = {
  name: 'per-pod objects of two pods share their hidden classes',
  script: `
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
    }`,
  expected: { sandboxAnnotations: true, containerAnnotations: true, executionTarget: true, targetPlatform: true },
};

/**
 * The JIT budget (src/tuning/jit.ts): a small function called once per "request" is optimised
 * after 1,500 calls with the runtime's budget, and not with V8's default (it needs about 2,500).
 * The optimising compiler works on a helper thread a busy machine may keep waiting: up to 6 s,
 * with 50 more calls at most.
 */
function jitBudget(tune: boolean): Check {
  return {
    name: tune ? 'with the runtime\'s JIT budget a once-per-request function is optimised after 1,500 requests' : 'with V8\'s default budget it is not (the control)',
    script: `
      import { tuneJitForRequestHandlers } from ${dist('src/tuning/jit.js')};
      if (${tune}) tuneJitForRequestHandlers();
      function handler(o) { return o.a + o.b * 2 + (o.c ? 1 : 0); }
      const requests = [{ a: 1, b: 2, c: true }, { a: 3, b: 4, c: false }];
      let sum = 0;
      for (let i = 0; i < 1500; i++) {
        sum += handler(requests[i & 1]);
        if (i % 100 === 0) await new Promise((r) => setImmediate(r));
      }
      let optimised = false;
      for (let wait = 0; wait < 50 && !optimised; wait++) {
        await new Promise((r) => setTimeout(r, 120));
        sum += handler(requests[0]);
        optimised = (%GetOptimizationStatus(handler) & 16) !== 0;
      }
      console.log(JSON.stringify({ optimised }));`,
    expected: { optimised: tune },
  };
}

async function run(check: Check): Promise<boolean> {
  const result = await runProcess(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', check.script], { killAfterMs: 30_000 });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  const passed = result.code === 0 && line === JSON.stringify(check.expected);
  process.stdout.write(`${passed ? 'PASS' : 'FAIL'} ${check.name}${passed ? '' : `: got ${line || `exit ${String(result.code)}`}, want ${JSON.stringify(check.expected)}\n${result.stderr}`}\n`);
  return passed;
}

let failed = 0;
for (const check of [mergedShapes, perPodShapes, jitBudget(false), jitBudget(true)]) {
  if (!(await run(check))) failed++;
}
process.exitCode = failed === 0 ? 0 : 1;
