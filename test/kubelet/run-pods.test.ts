import { expect } from 'chai';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { runPods, summarizePodRun } from '../../src/kubelet/run-pods.js';
import { ManifestErrors } from '../../src/apiserver/manifests.js';
import { useScriptedRuntime } from './support/scripted-runtime.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

describe('kubelet run pipeline (manifests → admission → CRI)', () => {
  const fx = useScriptedRuntime('winsim-run-');

  it('runs the bundled example pods: admitted ones reach the runtime, refused ones never do', async () => {
    const podFiles = (await readdir(join(examples, 'pods'))).sort().map((f) => join(examples, 'pods', f));
    const broken = join(fx.dir, 'broken.yaml');
    await writeFile(broken, 'apiVersion: v1\nkind: Pod\nmetadata: { name: broken }\nspec:\n  containers: [{ image: nano }]\n');
    const results = await runPods(fx.cri, [...podFiles, broken], {
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(fx.dir, 'pods'),
      pollIntervalMs: 5,
    });
    const rows = results.map(summarizePodRun).map((r) => [r.name, r.ready, r.status]);
    // Field validation is part of the API server's create (after the mutating admission), so
    // the invalid pod is refused in its place in file order, with its name.
    expect(rows).to.deep.equal([
      ['webserver-kep', '1/1', 'Running'],
      ['webapp-gmsa-with-logger', '2/2', 'Running'],
      ['webapp-invalid-credspec', '0/1', 'CreateContainerError'],
      ['reporting-sql', '1/1', 'Running'],
      ['webapp-gmsa', '2/2', 'Running'],
      ['reporting-webapp', '0/1', 'Forbidden'],
      ['run-as-username-container-demo', '1/1', 'Running'],
      ['run-as-username-pod-demo', '1/1', 'Running'],
      // The scripted runtime has no Windows version rule: the real one refuses both (test/demo).
      ['timesheets-ltsc2019', '1/1', 'Running'],
      ['nanoserver-ltsc2019', '1/1', 'Running'],
      ['broken', '0/1', 'Invalid'],
    ]);
    expect(summarizePodRun(results[10]!).detail).to.equal('Pod "broken" is invalid: spec.containers[0].name: Required value');
    // Only admitted pods got a sandbox: nine of the ten example pods, none for the broken file.
    expect(fx.runtime.calls.filter((c) => c === 'RunPodSandbox')).to.have.length(9);
  });

  // One pass over a new pod: the calls a kubelet makes to start it, and nothing read back after
  // (our rule for `kubelet run`: the row comes from the pass's own answers; node mode and static
  // pods read the pod back for their status). Two lists first: the pods the node has already.
  it('a new pod costs RunPodSandbox, ImageStatus, CreateContainer and StartContainer, with no read-back', async () => {
    const file = join(fx.dir, 'one.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata: { name: one }\nspec:\n  containers: [{ name: main, image: nano:ltsc2022 }]\n');
    const [result] = await runPods(fx.cri, [file], { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: requestingUser('alice'), podLogsRoot: join(fx.dir, 'pods') });
    expect(summarizePodRun(result!).status).to.equal('Running');
    expect(fx.runtime.calls.filter((c) => c !== 'Version')).to.deep.equal(['ListPodSandbox', 'ListContainers', 'RunPodSandbox', 'ImageStatus', 'CreateContainer', 'StartContainer']);
  });

  // The API server accepts a linux pod; the Windows kubelet's admit handler refuses it
  // (kubernetes v1.34.12 pkg/kubelet/lifecycle/predicate.go): no sandbox, phase Failed.
  it('a pod for linux is admitted by the API and rejected by the kubelet: PodOSNotSupported', async () => {
    const file = join(fx.dir, 'linux.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Pod\nmetadata: { name: tux }\nspec:\n  os: { name: linux }\n  containers: [{ name: main, image: busybox }]\n');
    const [result] = await runPods(fx.cri, [file], { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: requestingUser('alice'), podLogsRoot: join(fx.dir, 'pods') });
    expect(summarizePodRun(result!)).to.deep.include({ name: 'tux', ready: '0/1', status: 'PodOSNotSupported', detail: "Failed to admit pod as the OS field doesn't match node OS" });
    expect(fx.runtime.calls.filter((c) => c === 'RunPodSandbox')).to.deep.equal([]);
  });

  // The kubelet's general filter through `kubelet run` (predicate.go v1.34, scheduler plugins'
  // texts): each pod is refused before RunPodSandbox, the first failure its STATUS.
  it('the kubelet refuses by label, node selector, resources and node name, in file order', async () => {
    const pods = [
      ['label', 'metadata: { name: label, labels: { kubernetes.io/os: linux } }\nspec:\n  containers: [{ name: main, image: nano:ltsc2022 }]'],
      ['selector', 'metadata: { name: selector }\nspec:\n  nodeSelector: { kubernetes.io/os: linux }\n  containers: [{ name: main, image: nano:ltsc2022 }]'],
      ['big', 'metadata: { name: big }\nspec:\n  containers: [{ name: main, image: nano:ltsc2022, resources: { requests: { cpu: "3" } } }]'],
      ['bigger', 'metadata: { name: bigger }\nspec:\n  containers: [{ name: main, image: nano:ltsc2022, resources: { requests: { cpu: "1500m" } } }]'],
      ['elsewhere', 'metadata: { name: elsewhere }\nspec:\n  nodeName: winnode2\n  containers: [{ name: main, image: nano:ltsc2022 }]'],
    ];
    const files: string[] = [];
    for (const [name, body] of pods) {
      files.push(join(fx.dir, `${name}.yaml`));
      await writeFile(files.at(-1)!, `apiVersion: v1\nkind: Pod\n${body}\n`);
    }
    const results = await runPods(fx.cri, files, { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: requestingUser('alice'), podLogsRoot: join(fx.dir, 'pods'), podWorkers: 1 });
    expect(results.map(summarizePodRun).map((r) => `${r.name} ${r.status}: ${r.detail}`)).to.deep.equal([
      "label PodOSSelectorNodeLabelDoesNotMatch: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
      "selector NodeAffinity: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      'big Running: ',
      // The node's default allocatable is 4 cpus; "big" holds 3 of them.
      'bigger OutOfcpu: Node didn\'t have enough resource: cpu, requested: 1500, used: 3000, capacity: 4000',
      "elsewhere NodeName: Predicate NodeName failed: node(s) didn't match the requested node name",
    ]);
    expect(fx.runtime.calls.filter((c) => c === 'RunPodSandbox')).to.have.length(1);
  });

  it('starts nothing when the cluster manifests are broken', async () => {
    await writeFile(join(fx.dir, 'bad.yaml'), 'apiVersion: v1\nkind: PersistentVolume\nmetadata: { name: s }\n');
    const err = await runPods(fx.cri, [join(examples, 'pods', 'gmsa-pod-level.yaml')], {
      cluster: new DirectoryClusterSource(fx.dir),
      user: requestingUser('alice'),
      podLogsRoot: join(fx.dir, 'pods'),
    }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(ManifestErrors);
    expect(fx.runtime.calls).to.deep.equal([]);
  });

  it('the KEP design refuses a requesting user without `use` on the ConfigMap', async () => {
    const results = await runPods(fx.cri, [join(examples, 'pods', 'gmsa-configmap-design.yaml')], {
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('mallory'),
      design: 'kep-configmap',
      podLogsRoot: join(fx.dir, 'pods'),
    });
    expect(summarizePodRun(results[0]!)).to.deep.include({
      status: 'Forbidden',
      detail: 'user "mallory" is not authorized to `use` GMSA ConfigMap "webserver-credspec" in namespace "contoso-apps"',
    });
    expect(fx.runtime.calls).to.deep.equal([]);
  });
});
