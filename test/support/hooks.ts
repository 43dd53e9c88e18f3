// Mocha root hook plugin (registered with `require` in .mocharc.cjs): the run fails when a
// suite started a runtime or a control plane and did not stop it. The leftovers are stopped
// here, so even a failing run leaves no process or temp dir behind. In parallel mode (mocha
// --parallel) the root hooks run once per file, in that file's worker, and the global fixtures
// once, in the main process.
import { liveControlPlanes } from './control-plane.js';
import { liveRuntimes } from './runtime.js';
import { printTimes, timesRunEnded, timesRunStarted, timesTestEnded } from './suite-times.js';

export const mochaHooks = {
  beforeAll(): void {
    timesRunStarted();
  },
  afterEach(this: Mocha.Context): void {
    timesTestEnded(this.currentTest);
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    timesRunEnded();
    const left = liveRuntimes();
    const planes = liveControlPlanes();
    if (left.length === 0 && planes.length === 0) return;
    const names = [
      ...left.map((rt) => `cri-winsim runtime ${rt.name} (pid ${rt.pid})`),
      ...planes.map((cp) => `control plane ${cp.name}`),
    ];
    this.timeout(60_000);
    await Promise.allSettled([...left.map((rt) => rt.stop()), ...planes.map((cp) => cp.stop())]);
    throw new Error(`${names.length} process(es) were started and never stopped by their suite: ${names.join(', ')}`);
  },
};

let runStarted = 0;

export function mochaGlobalSetup(): void {
  runStarted = performance.now();
}

export function mochaGlobalTeardown(): void {
  printTimes((performance.now() - runStarted) / 1000);
}
