// examples/cluster-mode/ (simulated Windows nodes as pods of a Deployment, with their RBAC) is
// accepted by a real kube-apiserver v1.34.12: a server-side dry run validates every object with
// the API server's own validation and admission, and persists nothing.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { requireControlPlaneTools, startControlPlane, type ControlPlane } from '../support/control-plane.js';
import { repoRoot } from '../support/paths.js';

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
    const out = await cp!.kubectlOk(['apply', '--dry-run=server', '-f', join(dir, 'rbac.yaml'), '-f', join(dir, 'deployment.yaml')]);
    const lines = out.trim().split('\n');
    expect(lines.filter((l) => !/ (created|configured|unchanged) \(server dry run\)$/.test(l)), out).to.deep.equal([]);
    expect(lines.some((l) => l.startsWith('deployment.apps/cri-winsim-nodes '))).to.equal(true);
    const deployments = await cp!.kubectl(['get', 'deployment', 'cri-winsim-nodes', '-n', 'cri-winsim']);
    expect(deployments.code, 'a dry run persists nothing').to.not.equal(0);
  });

  it('the Deployment runs the image this repository builds, with the node command', () => {
    const docs = parseAllDocuments(readFileSync(join(dir, 'deployment.yaml'), 'utf8')).map((d) => d.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: { image?: string; args?: string[] }[] } } } });
    const container = docs.find((d) => d.kind === 'Deployment')!.spec!.template!.spec!.containers![0]!;
    expect(container.image).to.equal('cri-winsim:dev');
    expect(container.args?.[0]).to.equal('node');
  });
});
