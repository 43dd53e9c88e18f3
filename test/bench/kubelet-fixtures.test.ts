import { expect } from 'chai';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { writeKubeletFixtures } from '../../bench/kubelet-fixtures.js';

describe('kubelet throughput fixtures', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bench-kubelet-fixtures-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes N pod files that reference the gMSA by name with a run-as user', () => {
    const { podDir, podFiles } = writeKubeletFixtures(dir, 3);
    expect(readdirSync(podDir).sort()).to.deep.equal(['gmsa-web-00000.yaml', 'gmsa-web-00001.yaml', 'gmsa-web-00002.yaml']);
    const pod = parseAllDocuments(readFileSync(podFiles[2], 'utf8'))[0].toJS() as {
      kind: string;
      metadata: { name: string; namespace: string };
      spec: { serviceAccountName: string; securityContext: { windowsOptions: Record<string, string> } };
    };
    expect(pod.kind).to.equal('Pod');
    expect(pod.metadata).to.include({ name: 'gmsa-web-00002', namespace: 'bench' });
    expect(pod.spec.serviceAccountName).to.equal('webapp-sa');
    expect(pod.spec.securityContext.windowsOptions).to.deep.equal({ gmsaCredentialSpecName: 'webapp1', runAsUserName: 'ContainerUser' });
  });

  it('writes a cluster that lets the service account use the GMSACredentialSpec', () => {
    const { clusterDir } = writeKubeletFixtures(dir, 1);
    const docs = parseAllDocuments(readFileSync(join(clusterDir, 'objects.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string; [k: string]: unknown });
    expect(docs.map((d) => d.kind)).to.deep.equal(['Namespace', 'ServiceAccount', 'GMSACredentialSpec', 'ClusterRole', 'RoleBinding']);
    const spec = docs[2] as unknown as { credspec: { DomainJoinConfig: { MachineAccountName: string } } };
    expect(spec.credspec.DomainJoinConfig.MachineAccountName).to.equal('WebApplication1');
    const role = docs[3] as unknown as { rules: { verbs: string[]; resources: string[]; resourceNames: string[] }[] };
    expect(role.rules[0]).to.deep.include({ verbs: ['use'], resources: ['gmsacredentialspecs'], resourceNames: ['webapp1'] });
  });

  it('refuses a pod count that is not a positive integer', () => {
    expect(() => writeKubeletFixtures(dir, 0)).to.throw(RangeError, /positive integer/);
  });
});
