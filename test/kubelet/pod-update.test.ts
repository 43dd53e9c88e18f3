// `kubelet run` of a pod the node already runs, with a changed file: a pod UPDATE as the API
// server runs it — no mutation on UPDATE (windows-gmsa charts/gmsa mutatingwebhook.yaml registers
// CREATE only), ValidatePodUpdate (kubernetes v1.34.12 pkg/apis/core/validation/validation.go),
// then the validating webhook's validateUpdateRequest (kubernetes-sigs/windows-gmsa 993de21
// admission-webhook/webhook.go). Then the kubelet restarts a container whose image changed
// (kubernetes v1.34.12 pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions).
import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { createCriClient, type CriClient } from '../../src/cri/proto.js';
import { validateGmsaWebhookUpdate, AdmissionError, type AdmissionContext } from '../../src/kubelet/admission.js';
import { DirectoryClusterSource, snapshotFromDocuments } from '../../src/kubelet/cluster.js';
import { formatFieldError } from '../../src/kubelet/field-errors.js';
import { parseDocuments } from '../../src/kubelet/manifests.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { PodRecordStore } from '../../src/kubelet/pod-records.js';
import { appliedPod, fileChanged, updatePod, validatePodUpdate } from '../../src/kubelet/pod-update.js';
import { requestingUser } from '../../src/kubelet/rbac.js';
import { runPods, summarizePodRun } from '../../src/kubelet/run-pods.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));
const credspec = '{"CmsPlugins":["ActiveDirectory"]}';
const forbiddenFirstLine =
  'spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)';

// The file as written (`last`), and the live pod the API server stored from it (`live`): the
// webhook inlined the credential spec and the ServiceAccount plugin kept the service account.
const last = (): V1Pod => ({
  metadata: { name: 'web', namespace: 'apps', uid: 'file-uid-1', labels: { app: 'web' } },
  spec: {
    serviceAccountName: 'web',
    securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapp' } },
    containers: [{ name: 'iis', image: 'iis:1' }],
  },
});
const live = (): V1Pod => {
  const pod = last();
  pod.metadata!.uid = 'live-uid';
  pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec = credspec;
  return pod;
};

describe('pod update: what kubectl apply makes of a changed file', () => {
  it('an unchanged file is no change (only the derived UID differs)', () => {
    const again = last();
    again.metadata!.uid = 'file-uid-2';
    expect(fileChanged(last(), again)).to.equal(false);
  });

  it('keeps what the server set (the inlined spec) and takes what the file changed (an image)', () => {
    const file = last();
    file.spec!.containers[0]!.image = 'iis:2';
    const next = appliedPod(live(), last(), file);
    expect(next.metadata!.uid).to.equal('live-uid');
    expect(next.spec!.securityContext!.windowsOptions).to.deep.equal({ gmsaCredentialSpecName: 'webapp', gmsaCredentialSpec: credspec });
    expect(next.spec!.containers).to.deep.equal([{ name: 'iis', image: 'iis:2' }]);
  });

  it('drops a field the file no longer has', () => {
    const file = last();
    delete file.metadata!.labels;
    expect(appliedPod(live(), last(), file).metadata).not.to.have.property('labels');
  });
});

describe('ValidatePodUpdate (kubernetes v1.34.12)', () => {
  const errors = (next: V1Pod, old: V1Pod = live()): string[] => validatePodUpdate(next, old).map(formatFieldError);

  it('lets an update change a container image and labels', () => {
    const next = live();
    next.spec!.containers[0]!.image = 'iis:2';
    next.metadata!.labels = { app: 'web', tier: 'front' };
    expect(errors(next)).to.deep.equal([]);
  });

  it('refuses a change of the GMSA name with the immutability text and a diff naming the field', () => {
    const next = live();
    next.spec!.securityContext!.windowsOptions!.gmsaCredentialSpecName = 'other';
    const [only, ...rest] = errors(next);
    expect(rest).to.deep.equal([]);
    expect(only!.split('\n')[0]).to.equal(forbiddenFirstLine);
    expect(only).to.include('\n-   "gmsaCredentialSpecName": "webapp",\n');
    expect(only).to.include('\n+   "gmsaCredentialSpecName": "other",\n');
    expect(only).to.match(/\n@@ -\d+,\d+ \+\d+,\d+ @@\n/);
  });

  it('refuses adding or removing containers, and stops there', () => {
    const next = live();
    next.spec!.containers.push({ name: 'b', image: 'x' });
    expect(errors(next)).to.deep.equal(['spec.containers: Forbidden: pod updates may not add or remove containers']);
  });

  it('checks an updated image and activeDeadlineSeconds as upstream does', () => {
    const next = live();
    next.spec!.containers[0]!.image = ' iis:2';
    expect(errors(next)).to.deep.equal(['spec.containers[0].image: Invalid value: " iis:2": must not have leading or trailing whitespace']);
    const withDeadline = live();
    withDeadline.spec!.activeDeadlineSeconds = 30;
    const longer = live();
    longer.spec!.activeDeadlineSeconds = 60;
    expect(errors(longer, withDeadline)).to.deep.equal(['spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value']);
    expect(errors(live(), withDeadline)).to.deep.equal(['spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value']);
  });
});

describe('pod UPDATE order: validation before the validating webhook', () => {
  const cluster = snapshotFromDocuments(parseDocuments('c.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata: { name: apps }\n').documents);
  const context = (design: AdmissionContext['design'] = 'webhook'): AdmissionContext => ({ cluster, user: requestingUser('alice'), design });

  it('a changed GMSA name would fail the webhook too, but ValidatePodUpdate answers first: 422', () => {
    const next = live();
    next.spec!.securityContext!.windowsOptions!.gmsaCredentialSpecName = 'other';
    // The webhook alone would refuse it with its own text…
    expect(() => validateGmsaWebhookUpdate(next, live())).to.throw(AdmissionError, `cannot update an existing pod's GMSA settings (GMSA name modified on pod "web")`);
    // …but the API server validates first.
    const result = updatePod(next, live(), context());
    if (result.allowed) throw new Error('expected a refusal');
    expect(result.error.code).to.equal(422);
    expect(result.error.by).to.equal('validation');
    expect(result.error.message.startsWith(`Pod "web" is invalid: ${forbiddenFirstLine}\n`)).to.equal(true);
  });

  it('under alpha-1.14 the GMSA settings are annotations, which updates may change: the alpha webhook answers, 403', () => {
    const annotation = 'pod.alpha.windows.kubernetes.io/gmsa-credential-spec-name';
    const old = live();
    old.metadata!.annotations = { [annotation]: 'webapp' };
    const next = structuredClone(old);
    next.metadata!.annotations![annotation] = 'other';
    const result = updatePod(next, old, context('alpha-1.14'));
    if (result.allowed) throw new Error('expected a refusal');
    expect({ code: result.error.code, by: result.error.by, message: result.error.message }).to.deep.equal({
      code: 403,
      by: 'gmsa-webhook',
      message: `cannot update an existing pod's gMSA annotation (annotation ${annotation} changed)`,
    });
  });

  it('an image change passes both', () => {
    const next = live();
    next.spec!.containers[0]!.image = 'iis:2';
    expect(updatePod(next, live(), context()).allowed).to.equal(true);
  });
});

describe('kubelet run of an existing pod against the cri-winsim runtime', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let dir: string;

  beforeEach(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    dir = await mkdtemp(join(tmpdir(), 'winsim-update-'));
  });
  afterEach(async () => {
    cri?.close();
    await runtime?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const podFile = (name: string, gmsa: string, image: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name}, namespace: contoso-apps }
spec:
  serviceAccountName: webapp
  securityContext:
    windowsOptions:
      gmsaCredentialSpecName: ${gmsa}
  containers:
    - name: main
      image: ${image}
      command: ["ping", "-t", "localhost"]
`;

  async function run(file: string) {
    const results = await runPods(cri, [file], {
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(dir, 'pods'),
      records: new PodRecordStore(join(dir, 'kubelet')),
    });
    return results[0]!;
  }

  it('same file again: AlreadyExists, as before; changed GMSA name: 422 from ValidatePodUpdate; changed image: the container is restarted', async () => {
    const file = join(dir, 'web.yaml');
    await writeFile(file, podFile('web', 'webapplication1', 'mcr.microsoft.com/windows/nanoserver:ltsc2019'));
    expect(summarizePodRun(await run(file)).status).to.equal('Running');
    expect(summarizePodRun(await run(file)).status).to.equal('AlreadyExists');

    await writeFile(file, podFile('web', 'eventlogger', 'mcr.microsoft.com/windows/nanoserver:ltsc2019'));
    const refused = await run(file);
    if (refused.stage !== 'admission') throw new Error(`expected a refusal, got ${refused.stage}`);
    expect(refused.operation).to.equal('update');
    expect(refused.error.code).to.equal(422);
    expect(refused.error.message.split('\n')[0]).to.equal(`Pod "web" is invalid: ${forbiddenFirstLine}`);

    await writeFile(file, podFile('web', 'webapplication1', 'mcr.microsoft.com/windows/nanoserver:ltsc2022'));
    const updated = await run(file);
    if (updated.stage !== 'runtime') throw new Error(`expected the update to be accepted, got ${updated.stage}`);
    expect(updated.outcome.events.map((e) => `${e.reason}: ${e.message}`)).to.include('Killing: Container main definition changed, will be restarted');
    const [pod] = await listNodePods(cri);
    const attempts = pod!.containers.map((c) => [c.attempt, c.state, c.image]);
    expect(attempts).to.deep.include.members([
      [0, 'Exited', 'mcr.microsoft.com/windows/nanoserver:ltsc2019'],
      [1, 'Running', 'mcr.microsoft.com/windows/nanoserver:ltsc2022'],
    ]);
    // The stored pod kept the inlined credential spec: the restarted container still has it.
    expect(updated.pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.include('WebApplication1');
  });
});
