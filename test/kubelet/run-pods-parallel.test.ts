import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient, type CriClient } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { runPods, summarizePodRun, type PodRunResult } from '../../src/kubelet/run-pods.js';
import { TurnSequence } from '../../src/kubelet/pod-worker-options.js';
import { ScriptedRuntime } from './support/scripted-runtime.js';

describe('kubelet run with parallel pod workers', () => {
  let dir: string;
  let runtime: ScriptedRuntime;
  let cri: CriClient;
  let podFiles: string[];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-parallel-'));
    runtime = new ScriptedRuntime();
    await runtime.listen(join(dir, 'cri.sock'));
    cri = createCriClient(`unix://${join(dir, 'cri.sock')}`);
    await mkdir(join(dir, 'cluster'));
    await mkdir(join(dir, 'pods'));
    // Six pods of one image the node does not have yet, and one refused pod in the middle.
    podFiles = [];
    for (let i = 0; i < 7; i++) {
      const file = join(dir, 'pods', `pod-${i}.yaml`);
      const namespace = i === 3 ? 'nowhere' : 'default';
      await writeFile(file, `apiVersion: v1\nkind: Pod\nmetadata: { name: web-${i}, namespace: ${namespace} }\nspec:\n  containers: [{ name: iis, image: "iis:ltsc2022" }]\n`);
      podFiles.push(file);
    }
  });
  afterEach(async () => {
    cri.close();
    runtime.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const run = (podWorkers: number): Promise<PodRunResult[]> =>
    runPods(cri, podFiles, {
      cluster: new DirectoryClusterSource(join(dir, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(dir, 'pod-logs'),
      callTimeoutMs: 5000,
      podWorkers,
    });

  it('pulls an image once however many pods need it at the same time, and reports in file order', async () => {
    const results = await run(4);
    expect(results.map(summarizePodRun).map((s) => [s.name, s.status])).to.deep.equal([
      ['web-0', 'Running'],
      ['web-1', 'Running'],
      ['web-2', 'Running'],
      ['web-3', 'NotFound'],
      ['web-4', 'Running'],
      ['web-5', 'Running'],
      ['web-6', 'Running'],
    ]);
    expect(runtime.calls.filter((c) => c === 'PullImage')).to.have.length(1);
    expect(runtime.calls.filter((c) => c === 'RunPodSandbox')).to.have.length(6);
    // One pod pulled; the others found the image present, as they would one after another.
    const imageEvents = results.flatMap((r) => (r.stage === 'runtime' ? r.outcome.events.filter((e) => e.reason === 'Pulling' || e.reason === 'Pulled') : []));
    expect(imageEvents.filter((e) => e.reason === 'Pulling')).to.have.length(1);
    expect(imageEvents.filter((e) => e.message === 'Container image "iis:ltsc2022" already present on machine')).to.have.length(5);
  });

  it('refuses a pod worker count out of range before touching the runtime', async () => {
    for (const workers of [0, 1.5, 257]) {
      const err = await run(workers).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(RangeError);
      expect((err as Error).message).to.equal(`pod workers must be an integer from 1 to 256, got ${workers}`);
    }
    expect(runtime.calls).to.deep.equal([]);
  });
});

describe('turn sequence (RunPodSandbox in file order)', () => {
  it('lets each turn go only after every earlier one was released, whatever order they finish in', async () => {
    const turns = new TurnSequence();
    const order: number[] = [];
    const held = [0, 1, 2, 3, 4].map((i) => turns.turn(i));
    // Turn 3 gives up before anyone went (a refused pod); the others take theirs in reverse order.
    held[3]!.release();
    const taken = [4, 2, 1, 0].map((i) =>
      held[i]!.take().then(() => {
        order.push(i);
        held[i]!.release();
        held[i]!.release(); // a second release changes nothing
      }),
    );
    await Promise.all(taken);
    expect(order).to.deep.equal([0, 1, 2, 4]);
  });
});
