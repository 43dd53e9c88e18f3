// Mocha root hook plugin (registered with `require` in .mocharc.json): the run fails when a
// suite started a runtime and did not stop it. The leftover runtimes are stopped here, so
// even a failing run leaves no process or temp dir behind.
import { liveRuntimes } from './runtime.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    const left = liveRuntimes();
    if (left.length === 0) return;
    const names = left.map((rt) => `${rt.name} (pid ${rt.pid})`);
    await Promise.allSettled(left.map((rt) => rt.stop()));
    throw new Error(`${left.length} cri-winsim runtime(s) were started and never stopped by their suite: ${names.join(', ')}`);
  },
};
