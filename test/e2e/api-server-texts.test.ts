// The API server texts the simulated admission reproduces, checked against a real kube-apiserver
// (Kubernetes v1.34.12, test/support/control-plane.ts) driven by the real kubectl: the 422 of an
// inlined credential spec over 64 KiB at creation, the aggregate of several field errors, and the
// 422 of a GMSA change on update (pod spec immutability, ValidatePodUpdate), which a real API
// server answers before any validating webhook could, and ValidatePodUpdate's rules for
// tolerations (only added), scheduling gates (only removed) and a gated pod's nodeSelector.
// Skipped when the tools are not built.
import { expect } from 'chai';
import type { V1Pod } from '@kubernetes/client-node';
import { admitPod, type AdmissionError } from '../../src/apiserver/admission.js';
import { snapshotFromDocuments } from '../../src/apiserver/cluster.js';
import { formatFieldError } from '../../src/apiserver/field-errors.js';
import { parseDocuments } from '../../src/apiserver/manifests.js';
import { updatePod } from '../../src/apiserver/pod-update.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { requireControlPlaneTools, startControlPlane, type ControlPlane } from '../support/control-plane.js';

const cluster = snapshotFromDocuments(parseDocuments('c.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata: { name: default }\n').documents);
const context = { cluster, user: requestingUser('alice'), design: 'webhook' as const };

/** How kubectl prints a 422: `The Pod "x" is invalid: a`, or for several `The Pod "x" is invalid: \n* a\n* b`. */
function kubectlText(error: AdmissionError, name: string): string {
  // A repeated cause is printed once (kubectl's statusCausesToAggrError).
  const fields = [...new Set((error.fields ?? []).map(formatFieldError))];
  return `The Pod ${JSON.stringify(name)} is invalid: ${fields.length === 1 ? fields[0] : `\n${fields.map((f) => `* ${f}`).join('\n')}`}\n`;
}

function refused(result: ReturnType<typeof admitPod>): AdmissionError {
  if (result.allowed) throw new Error('expected a refusal');
  return result.error;
}

describe('API server texts: the simulation against a real kube-apiserver v1.34.12', function () {
  this.timeout(180_000);
  let cp: ControlPlane | undefined;

  before(async function () {
    requireControlPlaneTools(this);
    cp = await startControlPlane({ scheduler: false, nodeNames: ['winsim-1'] });
  });
  after(async () => {
    await cp?.stop();
  });

  it('a credential spec over 64 KiB: the same 422 text (validation.go validateWindowsSecurityContextOptions)', async () => {
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'big', namespace: 'default' },
      spec: { securityContext: { windowsOptions: { gmsaCredentialSpecName: 'huge', gmsaCredentialSpec: `{"Padding":"${'x'.repeat(70_000)}"}` } }, containers: [{ name: 'c', image: 'x' }] },
    };
    const real = await cp!.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    expect(real.code).to.equal(1);
    // No webhook runs in this control plane; in the simulation the webhook would refuse the
    // unknown resource name first, so the comparison uses the validation step alone.
    const simulated = refused(admitPod(pod, { ...context, design: 'kep-configmap' }));
    expect(simulated.code).to.equal(422);
    expect(real.stderr).to.equal(kubectlText(simulated, 'big'));
  });

  it('several field errors: the same list, in the same order', async () => {
    const yaml = 'apiVersion: v1\nkind: Pod\nmetadata: { name: two, namespace: default }\nspec:\n  securityContext:\n    windowsOptions: { runAsUserName: "" }\n  containers: [{ name: IIS, image: x }]\n';
    const real = await cp!.kubectl(['create', '-f', '-'], { input: yaml });
    const pod: V1Pod = { metadata: { name: 'two', namespace: 'default' }, spec: { securityContext: { windowsOptions: { runAsUserName: '' } }, containers: [{ name: 'IIS', image: 'x' }] } };
    expect(real.stderr).to.equal(kubectlText(refused(admitPod(pod, context)), 'two'));
  });

  it('invalid tolerations on create: the same list (validation.go ValidateTolerations)', async () => {
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'tolerations', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'x' }], tolerations: [{ value: 'v' }, { key: '/k', value: '-x', effect: 'NoSchedule', tolerationSeconds: 5 }, { key: 'a/b/c', operator: 'Matches' }] },
    };
    const real = await cp!.kubectl(['create', '-f', '-'], { input: JSON.stringify(pod) });
    expect(real.code).to.equal(1);
    expect(real.stderr).to.equal(kubectlText(refused(admitPod(pod, context)), 'tolerations'));
  });

  // The DefaultTolerationSeconds admission plugin adds these on create unless the pod has them;
  // written out, they are in both the live pod and the update.
  const defaultTolerations = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ];
  const os = { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' };
  const updates: { name: string; old: Partial<NonNullable<V1Pod['spec']>>; next: Partial<NonNullable<V1Pod['spec']>> }[] = [
    { name: 'tol-modified', old: { tolerations: [...defaultTolerations, os] }, next: { tolerations: [...defaultTolerations, { ...os, value: 'linux' }] } },
    { name: 'tol-invalid', old: { tolerations: defaultTolerations }, next: { tolerations: [...defaultTolerations, { key: 'a', operator: 'Exists', value: 'v', effect: 'Sometimes' }] } },
    { name: 'gate-added', old: { tolerations: defaultTolerations, schedulingGates: [{ name: 'a' }] }, next: { tolerations: defaultTolerations, schedulingGates: [{ name: 'a' }, { name: 'example.com/wait' }] } },
    {
      name: 'gated-selector',
      old: { tolerations: defaultTolerations, schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'windows' } },
      next: { tolerations: defaultTolerations, schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'linux', disk: 'ssd' } },
    },
  ];
  for (const u of updates) {
    it(`ValidatePodUpdate ${u.name}: the same 422 text (validation.go validateOnlyAddedTolerations, validateOnlyDeletedSchedulingGates, validateNodeSelectorMutation)`, async () => {
      const pod = (extra: Partial<NonNullable<V1Pod['spec']>>): V1Pod => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: u.name, namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'x' }], ...extra } });
      // apply, as `kubelet run` of a changed file is: what the server set (the service account
      // and its token volume) stays in the update.
      expect((await cp!.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod(u.old)) })).code).to.equal(0);
      const real = await cp!.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pod(u.next)) });
      expect(real.code).to.equal(1);
      const simulated = updatePod(pod(u.next), pod(u.old), context);
      if (simulated.allowed) throw new Error('expected a refusal');
      expect(real.stderr).to.equal(kubectlText(simulated.error, u.name));
    });
  }

  it('a changed gmsaCredentialSpecName on update: 422 pod updates may not change fields…, first line identical, then a diff hunk', async () => {
    const yaml = (name: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata: { name: web, namespace: default }\nspec:\n  securityContext:\n    windowsOptions:\n      gmsaCredentialSpecName: ${name}\n      gmsaCredentialSpec: '{}'\n  containers: [{ name: c, image: x }]\n`;
    expect((await cp!.kubectl(['apply', '-f', '-'], { input: yaml('webapp') })).code).to.equal(0);
    const real = await cp!.kubectl(['apply', '-f', '-'], { input: yaml('other') });
    expect(real.code).to.equal(1);
    const live: V1Pod = { metadata: { name: 'web', namespace: 'default' }, spec: { securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: '{}' } }, containers: [{ name: 'c', image: 'x' }] } };
    const next = structuredClone(live);
    next.spec!.securityContext!.windowsOptions!.gmsaCredentialSpecName = 'other';
    const simulated = updatePod(next, live, context);
    if (simulated.allowed) throw new Error('expected a refusal');
    const ours = kubectlText(simulated.error, 'web').split('\n');
    const theirs = real.stderr.split('\n');
    expect(ours[0]).to.equal(theirs[0]);
    // Both go on with a unified diff hunk (go-difflib: no file headers, 3 lines of context); the
    // lines differ because upstream diffs its internal Go types.
    expect(theirs[1]).to.match(/^@@ -\d+,7 \+\d+,7 @@$/);
    expect(ours[1]).to.match(/^@@ -\d+,7 \+\d+,7 @@$/);
    expect(theirs.filter((l) => l.startsWith('-') || l.startsWith('+')).map((l) => l.replace('GMSACredentialSpecName', 'gmsaCredentialSpecName'))).to.deep.equal(
      ours.filter((l) => l.startsWith('-') || l.startsWith('+')),
    );
  });
});
