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
import { validateGmsaWebhookUpdate, AdmissionError, type AdmissionContext } from '../../src/apiserver/admission.js';
import { DirectoryClusterSource, snapshotFromDocuments } from '../../src/apiserver/cluster.js';
import { formatFieldError } from '../../src/apiserver/field-errors.js';
import { parseDocuments } from '../../src/apiserver/manifests.js';
import { listNodePods } from '../../src/kubelet/node-pods.js';
import { PodRecordStore } from '../../src/kubelet/pod-records.js';
import { appliedPod, fileChanged, updatePod, validatePodUpdate } from '../../src/apiserver/pod-update.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
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

// kubernetes v1.34.12 pkg/apis/core/validation/validation.go ValidatePodUpdate:
// validateOnlyAddedTolerations (then ValidateTolerations of the new list, which ValidatePodSpec
// runs too: the API's message shows such an error once), validateOnlyDeletedSchedulingGates, and
// for a gated pod validateNodeSelectorMutation.
describe('ValidatePodUpdate: tolerations, scheduling gates, gated node selectors', () => {
  const noExecute = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
  const os = { key: 'os', operator: 'Equal', value: 'windows', effect: 'NoSchedule' };
  const withSpec = (extra: Partial<NonNullable<V1Pod['spec']>>): V1Pod => {
    const pod = live();
    Object.assign(pod.spec!, extra);
    return pod;
  };
  // An invalid new toleration is reported by ValidatePodSpec and again by validateOnlyAddedTolerations.
  const twice = (errs: string[]): string[] => [...errs, ...errs];
  const cases: { name: string; old: Partial<NonNullable<V1Pod['spec']>>; next: Partial<NonNullable<V1Pod['spec']>>; expected: string[] }[] = [
    { name: 'a toleration added', old: { tolerations: [os] }, next: { tolerations: [os, noExecute] }, expected: [] },
    { name: 'tolerationSeconds changed', old: { tolerations: [noExecute] }, next: { tolerations: [{ ...noExecute, tolerationSeconds: 60 }] }, expected: [] },
    { name: 'tolerations reordered', old: { tolerations: [os, noExecute] }, next: { tolerations: [noExecute, os] }, expected: [] },
    {
      name: 'an existing toleration modified',
      old: { tolerations: [os] },
      next: { tolerations: [{ ...os, value: 'linux' }] },
      expected: ['spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds'],
    },
    {
      name: 'an existing toleration removed (only the first missing one is reported)',
      old: { tolerations: [os, noExecute] },
      next: { tolerations: [] },
      expected: ['spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds'],
    },
    {
      name: 'an added toleration that is invalid',
      old: {},
      next: { tolerations: [{ operator: 'Equal', value: 'x', effect: 'NoExecute', tolerationSeconds: 5 }, { key: 'a', operator: 'Exists', value: 'v', effect: 'Sometimes' }] },
      expected: twice([
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"',
        'spec.tolerations[1].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'',
        'spec.tolerations[1].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
      ]),
    },
    {
      name: 'tolerationSeconds without NoExecute, a bad key and a bad operator',
      old: {},
      next: { tolerations: [{ key: 'a/b/c', operator: 'Equal', value: 'v', effect: 'NoSchedule', tolerationSeconds: 5 }, { key: 'k', operator: 'Matches', value: 'v' }] },
      expected: twice([
        "spec.tolerations[0].key: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        'spec.tolerations[1].operator: Unsupported value: "Matches": supported values: "Equal", "Exists"',
      ]),
    },
    { name: 'a scheduling gate removed', old: { schedulingGates: [{ name: 'a' }, { name: 'b' }] }, next: { schedulingGates: [{ name: 'b' }] }, expected: [] },
    {
      name: 'a scheduling gate added',
      old: { schedulingGates: [{ name: 'a' }] },
      next: { schedulingGates: [{ name: 'a' }, { name: 'example.com/wait' }] },
      expected: ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'example.com/wait'"],
    },
    {
      name: 'scheduling gates on a pod that had none',
      old: {},
      next: { schedulingGates: [{ name: 'x' }] },
      expected: ["spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'"],
    },
    { name: 'a gated pod gains a nodeSelector entry', old: { schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'windows' } }, next: { schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'windows', disk: 'ssd' } }, expected: [] },
    {
      name: 'a gated pod changes a nodeSelector entry',
      old: { schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'windows' } },
      next: { schedulingGates: [{ name: 'a' }], nodeSelector: { os: 'linux', disk: 'ssd' } },
      expected: ['spec.nodeSelector: Invalid value: {"disk":"ssd","os":"linux"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(validatePodUpdate(withSpec(c.next), withSpec(c.old)).map(formatFieldError)).to.deep.equal(c.expected);
    });
  }

  it('a pod that was not gated may not change its nodeSelector', () => {
    const [only, ...rest] = validatePodUpdate(withSpec({ nodeSelector: { os: 'windows', disk: 'ssd' } }), withSpec({ nodeSelector: { os: 'windows' } })).map(formatFieldError);
    expect(rest).to.deep.equal([]);
    expect(only!.split('\n')[0]).to.equal(forbiddenFirstLine);
    expect(only).to.include('"disk": "ssd"');
  });

  it('the API message shows an invalid added toleration once (the aggregate drops repeats)', () => {
    const cluster = snapshotFromDocuments(parseDocuments('c.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata: { name: apps }\n').documents);
    const context = (): AdmissionContext => ({ cluster, user: requestingUser('alice'), design: 'webhook' });
    const result = updatePod(withSpec({ tolerations: [{ key: 'a', operator: 'Exists', value: 'v' }] }), live(), context());
    if (result.allowed) throw new Error('the update was allowed');
    expect(result.error.message).to.equal('Pod "web" is invalid: spec.tolerations[0].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\'');
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
    await writeFile(file, podFile('web', 'webapplication1', 'mcr.microsoft.com/windows/servercore:ltsc2022'));
    expect(summarizePodRun(await run(file)).status).to.equal('Running');
    expect(summarizePodRun(await run(file)).status).to.equal('AlreadyExists');

    await writeFile(file, podFile('web', 'eventlogger', 'mcr.microsoft.com/windows/servercore:ltsc2022'));
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
      [0, 'Exited', 'mcr.microsoft.com/windows/servercore:ltsc2022'],
      [1, 'Running', 'mcr.microsoft.com/windows/nanoserver:ltsc2022'],
    ]);
    // The stored pod kept the inlined credential spec: the restarted container still has it.
    expect(updated.pod.spec!.securityContext!.windowsOptions!.gmsaCredentialSpec).to.include('WebApplication1');
  });
});
