import { expect } from 'chai';
import { access, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCriClient, unaryCall, type CriClient } from '../../src/cri/proto.js';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { deleteNodePod, listNodePods, nodePodStatus } from '../../src/kubelet/node-pods.js';
import { readPodViews } from '../../src/kubelet/pod-views.js';
import { requestingUser } from '../../src/apiserver/rbac.js';
import { runPods, summarizePodRun, type PodRunResult } from '../../src/kubelet/run-pods.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

describe('kubelet run against the cri-winsim runtime (example pods over a real socket)', function () {
  this.timeout(60_000);
  let runtime: RuntimeHandle;
  let cri: CriClient;
  let results: PodRunResult[];

  before(async () => {
    runtime = await startRuntime();
    cri = createCriClient(runtime.endpoint);
    const files = (await readdir(join(examples, 'pods'))).sort().map((f) => join(examples, 'pods', f));
    results = await runPods(cri, files, {
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: requestingUser('alice'),
      podLogsRoot: join(runtime.dir, 'pods'),
    });
  });
  after(async () => {
    cri?.close();
    await runtime?.stop();
  });

  it('starts every admitted pod and never sends a refused one to the runtime', async () => {
    const statuses = Object.fromEntries(results.map(summarizePodRun).map((r) => [r.name, r.status]));
    // An invalid credential spec fails the start in every AD mode; a gMSA the node may not use
    // does not in --ad-mode windows-server (the default, what a WS2019/2022 node does).
    expect(statuses['webapp-invalid-credspec']).to.be.oneOf(['CreateContainerError', 'RunContainerError']);
    expect(statuses['reporting-sql']).to.equal('Running');
    expect(statuses['reporting-webapp']).to.equal('Forbidden');
    // The Windows version rule on the 2022 node (docs/images.md): an app built for 2019 is refused
    // at start, a list with no entry the host runs at pull.
    expect(statuses['timesheets-ltsc2019']).to.equal('RunContainerError');
    expect(statuses['nanoserver-ltsc2019']).to.equal('ErrImagePull');
    const expectedFailures = ['webapp-invalid-credspec', 'reporting-webapp', 'timesheets-ltsc2019', 'nanoserver-ltsc2019'];
    const others = Object.entries(statuses).filter(([name]) => !expectedFailures.includes(name));
    expect(others.filter(([, status]) => status !== 'Running')).to.deep.equal([]);
    const sandboxes = (await unaryCall(cri.runtime, 'ListPodSandbox', {})).items;
    expect(sandboxes.map((s) => s.metadata!.name).sort()).to.deep.equal(
      results.filter((r) => r.stage === 'runtime').map((r) => r.pod.metadata!.name!).sort(),
    );
    expect(sandboxes.map((s) => s.metadata!.name)).not.to.include('reporting-webapp');
  });

  it('the runtime sees the kubelet labels, the inlined credential spec and the log paths', async () => {
    const result = results.find((r) => r.stage === 'runtime' && r.pod.metadata!.name === 'webapp-gmsa');
    if (result?.stage !== 'runtime') throw new Error('webapp-gmsa did not reach the runtime');
    const sandbox = (await unaryCall(cri.runtime, 'PodSandboxStatus', { pod_sandbox_id: result.outcome.sandboxId!, verbose: false })).status!;
    expect(sandbox.metadata).to.deep.include({ name: 'webapp-gmsa', namespace: 'contoso-apps', uid: result.pod.metadata!.uid });
    expect(sandbox.labels).to.include({ 'io.kubernetes.pod.name': 'webapp-gmsa', 'io.kubernetes.pod.namespace': 'contoso-apps' });

    const containerId = result.outcome.containers[0]!.containerId!;
    const status = (await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false })).status!;
    expect(status.labels).to.include({ 'io.kubernetes.container.name': 'iis', 'io.kubernetes.pod.uid': result.pod.metadata!.uid! });
    expect(status.log_path).to.equal(join(runtime.dir, 'pods', `contoso-apps_webapp-gmsa_${result.pod.metadata!.uid}`, 'iis', '0.log'));
    await access(status.log_path);
  });

  it('reads the pods back from the runtime and deletes one completely', async () => {
    const pods = await listNodePods(cri);
    expect(pods.map((p) => `${p.namespace}/${p.name}`)).to.deep.equal([
      'contoso-apps/reporting-sql',
      'contoso-apps/webapp-gmsa',
      'contoso-apps/webapp-gmsa-with-logger',
      'contoso-apps/webapp-invalid-credspec',
      'contoso-apps/webserver-kep',
      'default/nanoserver-ltsc2019',
      'default/run-as-username-container-demo',
      'default/run-as-username-pod-demo',
      'default/timesheets-ltsc2019',
    ]);
    const pinging = pods.find((p) => p.name === 'run-as-username-pod-demo')!;
    expect(nodePodStatus(pinging)).to.deep.equal({ ready: '1/1', status: 'Running' });

    const removed = await deleteNodePod(cri, pinging, { gracePeriodSeconds: 2 });
    expect(removed.sandboxes).to.deep.equal([pinging.sandboxId]);
    expect(removed.containers).to.deep.equal(pinging.containers.map((c) => c.id));
    const after = await listNodePods(cri);
    expect(after.map((p) => p.name)).not.to.include('run-as-username-pod-demo');
    expect(after).to.have.length(pods.length - 1);
    // Deleting again finds nothing left to remove, and does not fail.
    expect(await deleteNodePod(cri, pinging, { gracePeriodSeconds: 2 })).to.deep.equal({ containers: [], sandboxes: [] });
  });

  // A standalone kubelet (no API server: `kubelet run`, static pods) gives a hostNetwork pod no
  // podIP: the runtime reports none (containerd v2.2.7 sandbox_status.go getIPs) and
  // generateAPIPodStatus takes the node's IPs only `if kl.kubeClient != nil` (kubernetes v1.34
  // pkg/kubelet/kubelet_pods.go).
  it('a hostNetwork pod runs without an IP of the pod range and shows none', async () => {
    const file = join(runtime.dir, 'hostnet.yaml');
    await writeFile(file, [
      'apiVersion: v1', 'kind: Pod', 'metadata: {name: hostnet, namespace: default}',
      'spec:', '  hostNetwork: true',
      '  containers: [{name: agent, image: "mcr.microsoft.com/windows/servercore:ltsc2022", command: [ping, -t, localhost]}]', '',
    ].join('\n'));
    const [result] = await runPods(cri, [file], { cluster: new DirectoryClusterSource(join(examples, 'cluster')), user: requestingUser('alice'), podLogsRoot: join(runtime.dir, 'pods') });
    if (result?.stage !== 'runtime') throw new Error('hostnet did not reach the runtime');
    const sandbox = (await unaryCall(cri.runtime, 'PodSandboxStatus', { pod_sandbox_id: result.outcome.sandboxId!, verbose: false })).status!;
    expect(sandbox.state, 'SANDBOX_READY').to.equal(0);
    expect(sandbox.network?.ip).to.equal('');
    const view = (await readPodViews(cri, undefined)).find((v) => v.row.name === 'hostnet')!;
    expect(view.row).to.include({ status: 'Running', podIP: '' });
    expect(view.status).to.not.have.property('podIP');
    await deleteNodePod(cri, view.nodePod!, { gracePeriodSeconds: 0 });
  });
});
