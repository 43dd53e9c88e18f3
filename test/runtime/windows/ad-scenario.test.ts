import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { RuntimeMetrics } from '../../../src/cri/metrics.js';
import { silentLogger } from '../../../src/log.js';
import { formatPlan, parseScenario, planScenario, ScenarioRunner, type ScenarioDocument } from '../../../src/runtime/windows/ad-scenario.js';
import { DEFAULT_NODE_FILE } from '../../../src/runtime/windows/default-node.js';
import { LiveDomain } from '../../../src/runtime/windows/live-domain.js';
import { unaryCall } from '../../../src/cri/proto.js';
import {
  createWindowsContainer,
  execSync,
  IIS,
  KEP_EXAMPLE_CREDENTIAL_SPEC,
  startInProcessRuntime,
  windowsContainerConfig,
  windowsPodConfig,
} from '../../e2e/windows-support.js';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../../support/paths.js';

const live = () => new LiveDomain(DEFAULT_NODE_FILE.node, { domains: DEFAULT_NODE_FILE.domains, source: 'embedded default node' });

/** A short scenario: times in tens of milliseconds, jitter wide enough to reorder steps between seeds. */
const FLAPPING: ScenarioDocument = parseScenario(
  {
    steps: [
      { name: 'outage', after: '20ms', for: '60ms', jitter: '80ms', dcDown: 'dc1.contoso.com' },
      { after: '30ms', jitter: '80ms', rotatePassword: 'WebApplication1' },
      { after: '40ms', for: '30ms', jitter: '80ms', clockSkew: { dc: 'dc1.contoso.com', seconds: 600 } },
      { after: '50ms', jitter: '80ms', denyPrincipal: { gmsa: 'EventLogger', principal: 'WINNODE1$' } },
    ],
  },
  'flapping.yaml',
);

describe('active directory scenarios', () => {
  it('refuses a bad scenario naming the file and the field', () => {
    expect(() => parseScenario({ steps: [{ after: 'soon', dcDown: 'dc1' }] }, 's.yaml')).to.throw('s.yaml: steps[0].after: must be a duration such as 30s, 1m30s or 250ms (got "soon")');
    expect(() => parseScenario({ steps: [{ after: '1s' }] }, 's.yaml')).to.throw('s.yaml: steps[0]: must name exactly one change');
    expect(() => parseScenario({ steps: [{ after: '1s', dcDown: 'a', dcUp: 'a' }] }, 's.yaml')).to.throw('not dcDown and dcUp');
    expect(() => parseScenario({ steps: [{ after: '1s', domains: [{ dnsName: 'x' }] }] }, 's.yaml')).to.throw('s.yaml: steps[0].domains[0].netbiosName: is required');
  });

  it('refuses a step naming a domain controller or gMSA the domain does not have, scheduling nothing', () => {
    const domain = live();
    const scenario = parseScenario({ steps: [{ after: '1ms', dcDown: 'dc1.contoso.com' }, { after: '1ms', deleteGmsa: 'Nobody' }] }, 's.yaml');
    expect(() => new ScenarioRunner(domain, scenario, 's.yaml', planScenario(scenario, 1), silentLogger())).to.throw('s.yaml: steps[1]: no gMSA "Nobody" in the domain');
  });

  it('plans the same times for the same seed and other times for another', () => {
    const a = formatPlan(planScenario(FLAPPING, 7));
    expect(formatPlan(planScenario(FLAPPING, 7))).to.deep.equal(a);
    expect(formatPlan(planScenario(FLAPPING, 8))).to.not.deep.equal(a);
    // Without jitter, the file's times exactly, a step's end `for` after it.
    const plain = parseScenario({ steps: [{ after: '1m30s', for: '1m', dcDown: 'dc1.contoso.com' }] }, 'p.yaml');
    expect(formatPlan(planScenario(plain, 0))).to.deep.equal(['+90.000s steps[0] dcDown dc1.contoso.com', '+150.000s steps[0] dcDown dc1.contoso.com ends']);
  });

  it('two runs with one seed give the same sequence of states', async () => {
    const run = async (seed: number) => {
      const domain = live();
      const states: string[] = [];
      domain.onChange((s) => states.push(`${s.source} => ${JSON.stringify(s.domains)}`));
      const runner = new ScenarioRunner(domain, FLAPPING, 'flapping.yaml', planScenario(FLAPPING, seed), silentLogger());
      while (runner.remaining > 0) await sleep(20);
      return { states, outcomes: runner.outcomes };
    };
    const first = await run(42);
    const second = await run(42);
    expect(first.states).to.have.length(6);
    expect(second).to.deep.equal(first);
    // A step's end sets back what the domain was just before it.
    expect(first.outcomes.every((o) => o.error === undefined)).to.equal(true);
  });

  it('the examples in examples/ad are valid and name what the embedded node\'s domain has', () => {
    const read = (f: string) => parseYaml(readFileSync(join(repoRoot, 'examples', 'ad', f), 'utf8')) as unknown;
    for (const file of ['dc-outage.yaml', 'quick-flap.yaml']) {
      const scenario = parseScenario(read(file), file);
      const runner = new ScenarioRunner(live(), scenario, file, planScenario(scenario, 7), silentLogger());
      runner.stop();
    }
    expect(formatPlan(planScenario(parseScenario(read('quick-flap.yaml'), 'q'), 0))).to.deep.equal([
      '+2.000s steps[0] (dc outage) dcDown dc1.contoso.com',
      '+5.000s steps[0] (dc outage) dcDown dc1.contoso.com ends',
      '+6.000s steps[1] (clock skew) clockSkew {"dc":"dc1.contoso.com","seconds":600}',
      '+9.000s steps[1] (clock skew) clockSkew {"dc":"dc1.contoso.com","seconds":600} ends',
    ]);
    const state = live().apply(read('contoso-dc-down.yaml'), 'contoso-dc-down.yaml');
    expect(state.domains[0]!.domainControllers[0]!.reachable).to.equal(false);
  });

  it('stops: no change after stop', async () => {
    const domain = live();
    const scenario = parseScenario({ steps: [{ after: '30ms', dcDown: 'dc1.contoso.com' }] }, 's.yaml');
    const runner = new ScenarioRunner(domain, scenario, 's.yaml', planScenario(scenario, 0), silentLogger());
    runner.stop();
    await sleep(60);
    expect(domain.generation).to.equal(1);
  });
});

describe('active directory scenarios and metrics in a runtime', function () {
  this.timeout(60_000);

  it('a scenario given at open changes what a running container sees; the AD operations are counted', async () => {
    const dir = await import('node:fs/promises').then((fs) => fs.mkdtemp(join(process.env.TMPDIR ?? '/tmp', 'cri-winsim-sc-')));
    const scenarioFile = join(dir, 'outage.yaml');
    await import('node:fs/promises').then((fs) => fs.writeFile(scenarioFile, 'steps:\n  - after: 1500ms\n    for: 1s\n    dcDown: dc1.contoso.com\n'));
    const metrics = new RuntimeMetrics({ processMetrics: false });
    const rt = await startInProcessRuntime({ adScenario: { file: scenarioFile, seed: 3 }, adOperationMetrics: metrics.adOperations });
    try {
      const security = { credential_spec: KEP_EXAMPLE_CREDENTIAL_SPEC, run_as_username: 'NT AUTHORITY\\NETWORK SERVICE' };
      const pod = windowsPodConfig('scenario', join(rt.dir, 'pods'), security);
      const { containerId } = await createWindowsContainer(rt.cri, pod, windowsContainerConfig('app', IIS, security));
      await unaryCall(rt.cri.runtime, 'StartContainer', { container_id: containerId }, { timeoutMs: 10_000 });
      const verify = async () => (await execSync(rt.cri, containerId, ['nltest', '/sc_verify:contoso.com'])).exitCode;
      const seen: number[] = [];
      const until = Date.now() + 5000;
      while (Date.now() < until && rt.runtime.context.windows.currentScenario!.remaining > 0) {
        const code = await verify();
        if (seen.at(-1) !== code) seen.push(code);
        await sleep(50);
      }
      seen.push(await verify());
      // Up, down for a second, up again: 0, 1, 0 (repeats collapsed).
      expect(seen.filter((c, i) => i === 0 || seen[i - 1] !== c)).to.deep.equal([0, 1, 0]);
      const text = await metrics.text();
      expect(text).to.match(/cri_winsim_ad_operations_total\{op="nltest_sc_verify",result="success"\} \d+/);
      expect(text).to.match(/cri_winsim_ad_operations_total\{op="nltest_sc_verify",result="domain-controller-unreachable"\} \d+/);
      expect(text).to.contain('cri_winsim_ad_operation_duration_seconds_bucket{le="0.0001",op="nltest_sc_verify"}');
    } finally {
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  });
});
