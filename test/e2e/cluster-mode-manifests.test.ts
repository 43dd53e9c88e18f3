// examples/cluster-mode/ (simulated Windows nodes as pods of a StatefulSet, with their RBAC and PDB) is
// accepted by a real kube-apiserver v1.34.12: a server-side dry run validates every object with
// the API server's own validation and admission, and persists nothing.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { requireControlPlaneTools, startControlPlane, type ControlPlane } from '../support/control-plane.js';
import { repoRoot } from '../support/paths.js';
import { nodeNames } from '../../src/commands/node-names.js';

describe('examples/cluster-mode against a real kube-apiserver (server-side dry run)', function () {
  this.timeout(180_000);
  const dir = join(repoRoot, 'examples', 'cluster-mode');
  let cp: ControlPlane | undefined;

  before(async function () {
    requireControlPlaneTools(this);
    cp = await startControlPlane({ scheduler: false, nodeNames: [] });
  });
  after(async () => {
    await cp?.stop();
  });

  it('every object is accepted by the API server and nothing is created', async () => {
    // The namespace must exist for the namespaced objects' dry run: the one object created for real.
    await cp!.ensureNamespace('cri-winsim', []);
    const out = await cp!.kubectlOk(['apply', '--dry-run=server', '-f', join(dir, 'rbac.yaml'), '-f', join(dir, 'statefulset.yaml')]);
    const lines = out.trim().split('\n');
    expect(lines.filter((l) => !/ (created|configured|unchanged) \(server dry run\)$/.test(l)), out).to.deep.equal([]);
    expect(lines.some((l) => l.startsWith('statefulset.apps/cri-winsim-nodes '))).to.equal(true);
    expect(lines.some((l) => l.startsWith('poddisruptionbudget.policy/cri-winsim-nodes '))).to.equal(true);
    const sets = await cp!.kubectl(['get', 'statefulset', 'cri-winsim-nodes', '-n', 'cri-winsim']);
    expect(sets.code, 'a dry run persists nothing').to.not.equal(0);
  });

  interface Manifest {
    kind?: string;
    spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> }; template?: { metadata?: { labels?: Record<string, string> }; spec?: { containers?: { image?: string; args?: string[]; env?: { name: string; valueFrom?: { fieldRef?: { fieldPath?: string } } }[] }[] } } };
  }
  const manifests = (): Manifest[] => parseAllDocuments(readFileSync(join(dir, 'statefulset.yaml'), 'utf8')).map((d) => d.toJS() as Manifest);

  it('the StatefulSet runs the image this repository builds, with the node command', () => {
    const container = manifests().find((d) => d.kind === 'StatefulSet')!.spec!.template!.spec!.containers![0]!;
    expect(container.image).to.equal('cri-winsim:dev');
    expect(container.args?.[0]).to.equal('node');
  });

  it('renders disjoint, contiguous node names for every replica from its ordinal', () => {
    const set = manifests().find((d) => d.kind === 'StatefulSet')!;
    const container = set.spec!.template!.spec!.containers![0]!;
    // The ordinal comes from the StatefulSet controller's pod-index label through the downward API.
    const env = container.env!.find((e) => e.name === 'POD_INDEX')!;
    expect(env.valueFrom?.fieldRef?.fieldPath).to.equal("metadata.labels['apps.kubernetes.io/pod-index']");
    const flag = (name: string, ordinal: number): string | undefined =>
      container.args!.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3).replace('$(POD_INDEX)', String(ordinal));
    const rendered = (ordinal: number): string[] => nodeNames({ nodes: flag('nodes', ordinal), nodeNamePrefix: flag('node-name-prefix', ordinal), nodeOrdinal: flag('node-ordinal', ordinal) });
    const replicas = set.spec!.replicas!;
    const all = Array.from({ length: replicas + 1 }, (_, k) => rendered(k)).flat();
    expect(new Set(all).size, 'no name twice across replicas').to.equal(all.length);
    expect(all[0]).to.equal('win-1');
    expect(all.at(-1)).to.equal(`win-${all.length}`);
  });

  it('the PodDisruptionBudget selects the StatefulSet\'s pods', () => {
    const set = manifests().find((d) => d.kind === 'StatefulSet')!;
    const pdb = manifests().find((d) => d.kind === 'PodDisruptionBudget')!;
    expect(pdb.spec!.selector!.matchLabels).to.deep.equal(set.spec!.selector!.matchLabels);
    expect(set.spec!.template!.metadata!.labels).to.include(pdb.spec!.selector!.matchLabels!);
  });
});
