// Node mode against a real control plane (etcd, kube-apiserver, kube-scheduler and
// kube-controller-manager built from the pinned modules under tools/, kube-apiserver with its
// default kubelet flags; no mock): simulated Windows nodes register, get pods from the real
// scheduler and controllers, and report them through the API, all seen through the real kubectl
// and crictl.
// Upstream texts pinned here follow kubernetes v1.34: pkg/kubelet/lifecycle/predicate.go
// (PodOSNotSupported), pkg/kubelet/nodestatus/setters.go (conditions), pkg/kubelet/events and
// kuberuntime (event reasons and texts).
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, requireControlPlaneTools, type ControlPlane } from '../support/control-plane.js';
import { getLocal, withPortForward } from '../support/port-forward.js';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { liveNodeProcesses, startNodeProcess, type NodeProcess } from '../support/node-process.js';
import { cliPath, requireCriTool } from '../support/paths.js';
import { runProcess } from '../support/process.js';
import { until } from '../support/wait.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith } from '../runtime/windows/kep-example.js';
import { oneWorkerAtATime } from '../support/one-worker-at-a-time.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function runCrictlExec(target: { endpoint: string; dir: string }, id: string, cmd: string[]): Promise<string> {
  return (await runCrictl(target, ['exec', '-s', id, ...cmd])).stdout;
}

const SERVERCORE = 'mcr.microsoft.com/windows/servercore:ltsc2022';

function windowsPod(name: string, opts: { credentialSpec?: string; nodeName?: string; grace?: number } = {}): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(opts.nodeName === undefined ? { nodeSelector: { 'kubernetes.io/os': 'windows' } } : { nodeName: opts.nodeName }),
      terminationGracePeriodSeconds: opts.grace ?? 5,
      securityContext: {
        windowsOptions: {
          runAsUserName: 'ContainerUser',
          ...(opts.credentialSpec === undefined ? {} : { gmsaCredentialSpecName: 'webapplication1', gmsaCredentialSpec: opts.credentialSpec }),
        },
      },
      containers: [{ name: 'app', image: SERVERCORE, command: ['ping', '-t', 'localhost'] }],
    },
  };
}

describe('node mode against a real control plane', function () {
  // Its processes use the program's default pod ranges and node addresses.
  oneWorkerAtATime('default-addresses');
  this.timeout(180_000);
  let cp: ControlPlane;
  let dir: string;
  let node1: NodeProcess | undefined;
  let kubeconfig1: string;
  const stateDir = () => join(dir, 'winsim-1');
  const endpoint1 = () => ({ endpoint: `unix://${join(stateDir(), 'cri.sock')}`, dir: stateDir() });

  // --port 0: other suites on this machine may hold 127.0.0.1:10250.
  const node1Args = () => ['node', '--kubeconfig', kubeconfig1, '--hostname-override', 'winsim-1', '--state-dir', stateDir(), '--port', '0', '--client-ca-file', cp.kubeletClientCaFile, '--ad-mode', 'gmsa-kep'];
  const kubectlJson = async <T = any>(args: string[]): Promise<T> => JSON.parse(await cp.kubectlOk([...args, '-o', 'json'])) as T;
  const podJson = (name: string) => kubectlJson(['get', 'pod', name]);

  before(async function () {
    this.timeout(240_000);
    requireControlPlaneTools(this);
    requireCriTool(this, 'crictl');
    dir = await mkdtemp(join(tmpdir(), 'cwn-'));
    cp = await startControlPlane({ nodeNames: ['winsim-1', 'winsim-2'] });
    kubeconfig1 = await cp.nodeKubeconfig('winsim-1');
    node1 = await startNodeProcess(node1Args());
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('registers a Ready Windows node with the kubelet labels, nodeInfo and a lease (kubectl get nodes)', async () => {
    const table = await cp.kubectlOk(['get', 'nodes', '-L', 'kubernetes.io/os,node.kubernetes.io/windows-build']);
    expect(table).to.match(/^winsim-1\s+Ready\s+<none>\s+\S+\s+v1\.34\.12\s+windows\s+10\.0\.20348\s*$/m);
    const node = await kubectlJson(['get', 'node', 'winsim-1']);
    expect(node.metadata.labels).to.include({ 'kubernetes.io/os': 'windows', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'winsim-1', 'node.kubernetes.io/windows-build': '10.0.20348' });
    expect(node.status.nodeInfo).to.include({ operatingSystem: 'windows', architecture: 'amd64', kubeletVersion: 'v1.34.12', containerRuntimeVersion: 'cri-winsim://0.1.0', osImage: 'Windows Server 2022 Datacenter' });
    // InternalIP alone: what kube-apiserver's default --kubelet-preferred-address-types
    // (Hostname first) can dial without a DNS name for the node.
    expect(node.status.addresses).to.deep.equal([{ type: 'InternalIP', address: '127.0.0.1' }]);
    // TaintNodesByCondition tainted the new Node not-ready; the node lifecycle controller lifted
    // it once the node was Ready.
    await until('winsim-1 without taints', 60_000, async () => ((await kubectlJson(['get', 'node', 'winsim-1'])).spec.taints === undefined ? true : undefined));
    expect(node.status.daemonEndpoints.kubeletEndpoint.Port).to.be.above(0);
    expect(node.status.capacity).to.include({ pods: '110', cpu: '4' });
    const conditions = Object.fromEntries(node.status.conditions.map((c: any) => [c.type, [c.status, c.reason, c.message]]));
    expect(conditions).to.deep.equal({
      MemoryPressure: ['False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
      DiskPressure: ['False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
      PIDPressure: ['False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
      Ready: ['True', 'KubeletReady', 'kubelet is posting ready status'],
    });
    const lease = await kubectlJson(['get', 'lease', '-n', 'kube-node-lease', 'winsim-1']);
    expect(lease.spec).to.include({ holderIdentity: 'winsim-1', leaseDurationSeconds: 40 });
    expect(lease.metadata.ownerReferences[0]).to.include({ kind: 'Node', name: 'winsim-1', uid: node.metadata.uid });
  });

  it('runs a pod the scheduler places by nodeSelector, with its inlined gMSA credential spec and runAsUserName (crictl inspect)', async () => {
    await cp.apply(windowsPod('webapp', { credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC }));
    const pod = await until('pod webapp Running', 60_000, async () => {
      const p = await podJson('webapp');
      return p.status.phase === 'Running' ? p : undefined;
    });
    expect(pod.spec.nodeName).to.equal('winsim-1');
    expect(pod.status.hostIP).to.equal('127.0.0.1');
    expect(pod.status.podIP).to.match(/^127\.10\.0\.\d+$/);
    expect(pod.status.podIPs).to.deep.equal([{ ip: pod.status.podIP }]);
    const conditions = Object.fromEntries(pod.status.conditions.map((c: any) => [c.type, c.status]));
    expect(conditions).to.include({ PodReadyToStartContainers: 'True', Initialized: 'True', ContainersReady: 'True', Ready: 'True', PodScheduled: 'True' });
    const status = pod.status.containerStatuses[0];
    expect(status).to.include({ name: 'app', ready: true, restartCount: 0, started: true });
    expect(status.containerID).to.match(/^cri-winsim:\/\/[0-9a-f]+$/);
    expect(status.imageID).to.not.equal('');
    expect(status.state.running.startedAt).to.be.a('string');
    const table = await cp.kubectlOk(['get', 'pod', 'webapp', '-o', 'wide']);
    expect(table).to.match(/^webapp\s+1\/1\s+Running\s+0\s+\S+\s+\S+\s+winsim-1\s/m);

    const inspected = await crictlJson(endpoint1(), ['inspect', status.containerID.replace('cri-winsim://', '')]);
    expect(inspected.info.runtimeSpec.windows.credentialSpec).to.deep.equal(JSON.parse(KEP_EXAMPLE_CREDENTIAL_SPEC));
    expect(inspected.info.runtimeSpec.process.user.username).to.equal('ContainerUser');
    expect(inspected.status.labels).to.include({ 'io.kubernetes.pod.name': 'webapp', 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': pod.metadata.uid });

    const events = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=webapp', '-o', 'custom-columns=REASON:.reason,SOURCE:.source.component,MESSAGE:.message', '--no-headers']);
    expect(events).to.match(/^Created\s+kubelet\s+Created container: app$/m);
    expect(events).to.match(/^Started\s+kubelet\s+Started container app$/m);
  });

  it('kubectl logs and kubectl exec reach the container through the API server and the kubelet server', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'greeter', namespace: 'default' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [{ name: 'hello', image: 'mcr.microsoft.com/windows/servercore:ltsc2022', command: ['sh', '-c', 'echo hello from a simulated windows node; while true; do sleep 1; done'] }],
      },
    });
    await until('greeter Running', 60_000, async () => ((await podJson('greeter')).status.phase === 'Running' ? true : undefined));
    const logs = await until('kubectl logs greeter', 20_000, async () => {
      const out = await cp.kubectlOk(['logs', 'greeter']);
      return out.includes('hello') ? out : undefined;
    });
    expect(logs).to.equal('hello from a simulated windows node\n');
    const exec = await cp.kubectl(['exec', 'greeter', '--', 'hostname'], { timeoutMs: 30_000 });
    expect(exec.stdout.trim(), exec.stderr).to.equal('greeter');
  });

  it('kubectl attach reaches the main process of a container through the API server and the kubelet server', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'console', namespace: 'default' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        restartPolicy: 'Never',
        containers: [{ name: 'shell', image: SERVERCORE, command: ['sh'], stdin: true, stdinOnce: true }],
      },
    });
    await until('console Running', 60_000, async () => ((await podJson('console')).status.phase === 'Running' ? true : undefined));
    // The line runs in the main sh; kubectl's end of stdin closes it (stdinOnce) and sh exits.
    const res = await cp.kubectl(['attach', '-i', 'console', '-c', 'shell'], { input: 'echo hello from attach\n', timeoutMs: 30_000 });
    expect([res.code, res.stdout], res.stderr).to.deep.equal([0, 'hello from attach\n']);
    const done = await until('console Succeeded', 30_000, async () => {
      const p = await podJson('console');
      return p.status.phase === 'Succeeded' ? p : undefined;
    });
    expect(done.status.containerStatuses[0].state.terminated).to.include({ exitCode: 0, reason: 'Completed' });
  });

  it('the API server\'s node proxy refuses the node\'s loopback address, whatever the flags', async () => {
    // isProxyableHostname (pkg/registry/core/node/strategy.go, v1.34) allows global unicast
    // addresses only; logs, exec, attach and port-forward take another path.
    const proxied = await cp.kubectl(['get', '--raw', '/api/v1/nodes/winsim-1/proxy/healthz']);
    expect([proxied.code, proxied.stderr]).to.deep.equal([1, 'Error from server (BadRequest): address not allowed\n']);
  });

  it('runs a Deployment: kube-controller-manager creates its pods, they turn Ready on the node, and kubectl port-forward reaches one', async () => {
    await cp.apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'iis', namespace: 'default' },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'iis' } },
        template: {
          metadata: { labels: { app: 'iis' } },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'windows' },
            terminationGracePeriodSeconds: 1,
            containers: [{
              name: 'iis',
              image: 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
              ports: [{ containerPort: 80 }],
              readinessProbe: { httpGet: { path: '/iisstart.htm', port: 80 }, periodSeconds: 1 },
            }],
          },
        },
      },
    });
    // kubectl's text (staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go, v1.34).
    const rollout = await cp.kubectl(['rollout', 'status', 'deployment/iis', '--timeout=90s'], { timeoutMs: 100_000 });
    expect(rollout.stdout, rollout.stderr).to.contain('deployment "iis" successfully rolled out\n');
    const deployment = await kubectlJson(['get', 'deployment', 'iis']);
    expect(deployment.status).to.include({ replicas: 3, readyReplicas: 3, availableReplicas: 3 });
    const pods = (await kubectlJson(['get', 'pods', '-l', 'app=iis'])).items;
    expect(pods.map((p: any) => [p.metadata.ownerReferences[0].kind, p.spec.nodeName, p.spec.serviceAccountName, p.status.phase])).to.deep.equal([
      ['ReplicaSet', 'winsim-1', 'default', 'Running'], ['ReplicaSet', 'winsim-1', 'default', 'Running'], ['ReplicaSet', 'winsim-1', 'default', 'Running'],
    ]);
    expect(new Set(pods.map((p: any) => p.status.podIP)).size).to.equal(3);

    const page = await withPortForward(cp, 'deployment/iis', 80, (port) => getLocal(port, '/iisstart.htm'));
    expect(page.status).to.equal(200);

    // Deleted, the garbage collector removes its ReplicaSet and pods, and the kubelet their sandboxes.
    await cp.kubectlOk(['delete', 'deployment', 'iis']);
    await until('the pods of deployment iis gone', 60_000, async () => ((await kubectlJson(['get', 'pods', '-l', 'app=iis'])).items.length === 0 ? true : undefined));
    await until('the runtime has no sandbox of deployment iis', 20_000, async () => {
      const ps = await crictlJson(endpoint1(), ['pods', '--label', 'app=iis', '-o', 'json']);
      return ps.items.length === 0 ? true : undefined;
    });
  });

  // kubernetes v1.34 pkg/kubelet/kubelet_pods.go generateAPIPodStatus ("HostNetwork Pods inherit
  // the node IPs as PodIPs"); containerd v2.2.7 internal/cri/server/sandbox_status.go getIPs
  // reports no IP for a sandbox in the node's network (on Windows: a HostProcess pod).
  it('a hostNetwork HostProcess pod has the node\'s IP as podIP; its sandbox reports none (crictl inspectp)', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hostproc', namespace: 'default' },
      spec: {
        nodeName: 'winsim-1',
        hostNetwork: true,
        terminationGracePeriodSeconds: 1,
        securityContext: { windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' } },
        containers: [{ name: 'agent', image: SERVERCORE, command: ['ping', '-t', 'localhost'] }],
      },
    });
    const pod = await until('hostproc Running', 60_000, async () => {
      const p = await podJson('hostproc');
      return p.status.phase === 'Running' ? p : undefined;
    });
    expect(pod.status.hostIP).to.equal('127.0.0.1');
    expect(pod.status.podIP).to.equal('127.0.0.1');
    expect(pod.status.podIPs).to.deep.equal([{ ip: '127.0.0.1' }]);
    const sandboxes = await crictlJson(endpoint1(), ['pods', '--label', 'io.kubernetes.pod.name=hostproc', '-o', 'json']);
    expect(sandboxes.items).to.have.length(1);
    const inspected = await crictlJson(endpoint1(), ['inspectp', sandboxes.items[0].id]);
    expect(inspected.status.network.ip).to.equal('');
    await cp.kubectlOk(['delete', 'pod', 'hostproc', '--wait=true', '--timeout=60s']);
  });

  // Probe texts: pkg/kubelet/prober/prober.go (Unhealthy), kuberuntime_manager.go computePodActions
  // and kuberuntime_container.go killContainer (Killing), kubernetes v1.34.12.
  it('runs probes: Ready after an httpGet readiness probe succeeds; a failing exec liveness probe kills and restarts the container', async () => {
    const windows = { nodeSelector: { 'kubernetes.io/os': 'windows' }, terminationGracePeriodSeconds: 2 };
    await cp.apply({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'iis-ready', namespace: 'default' },
          spec: {
            ...windows,
            containers: [{
              name: 'iis',
              image: 'mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
              ports: [{ name: 'http', containerPort: 80 }],
              readinessProbe: { httpGet: { path: '/iisstart.htm', port: 'http' }, periodSeconds: 1 },
            }, {
              name: 'sidecar',
              image: SERVERCORE,
              command: ['ping', '-t', 'localhost'],
              readinessProbe: { httpGet: { path: '/missing', port: 80 }, periodSeconds: 1, failureThreshold: 1 },
            }],
          },
        },
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'unhealthy', namespace: 'default' },
          spec: {
            ...windows,
            containers: [{ name: 'app', image: SERVERCORE, command: ['ping', '-t', 'localhost'], livenessProbe: { exec: { command: ['cmd', '/c', 'exit 1'] }, periodSeconds: 1, failureThreshold: 2 } }],
          },
        },
      ],
    });
    const ready = await until('iis-ready: iis ready', 60_000, async () => {
      const p = await podJson('iis-ready');
      return p.status.containerStatuses?.find((c: any) => c.name === 'iis')?.ready === true ? p : undefined;
    });
    const byName = Object.fromEntries(ready.status.containerStatuses.map((c: any) => [c.name, [c.ready, c.started]]));
    expect(byName).to.deep.equal({ iis: [true, true], sidecar: [false, true] });
    const conditions = Object.fromEntries(ready.status.conditions.map((c: any) => [c.type, [c.status, c.message ?? '']]));
    expect(conditions).to.deep.include({ ContainersReady: ['False', 'containers with unready status: [sidecar]'], Ready: ['False', 'containers with unready status: [sidecar]'] });
    expect(await cp.kubectlOk(['get', 'pod', 'iis-ready', '--no-headers'])).to.match(/^iis-ready\s+1\/2\s+Running\s+0\s/);
    const readinessEvents = await until('the Unhealthy event of iis-ready', 30_000, async () => {
      const out = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=iis-ready,reason=Unhealthy', '-o', 'custom-columns=TYPE:.type,FIELD:.involvedObject.fieldPath,MESSAGE:.message', '--no-headers']);
      return out.trim() === '' ? undefined : out;
    });
    expect(readinessEvents).to.match(/^Warning\s+spec\.containers\{sidecar\}\s+Readiness probe failed: HTTP probe failed with statuscode: 404$/m);

    const restarted = await until('unhealthy restarted', 60_000, async () => {
      const p = await podJson('unhealthy');
      return (p.status.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
    });
    expect(restarted.status.containerStatuses[0].lastState.terminated).to.be.an('object');
    const events = await until('Killing event of unhealthy', 30_000, async () => {
      const out = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=unhealthy', '-o', 'custom-columns=REASON:.reason,MESSAGE:.message', '--no-headers']);
      return /^Killing/m.test(out) ? out : undefined;
    });
    // Exec probes quote the command's output, empty for `exit 1`.
    expect(events).to.match(/^Unhealthy\s+Liveness probe failed: $/m);
    expect(events).to.match(/^Killing\s+Container app failed liveness probe, will be restarted$/m);
    await cp.kubectlOk(['delete', 'pod', 'iis-ready', 'unhealthy', '--wait=false']);
  });

  it('reports RunContainerError and back-off with the runtime message when the node may not use the gMSA (--ad-mode gmsa-kep)', async () => {
    const denied = kepExampleWith((doc) => {
      doc.DomainJoinConfig.MachineAccountName = 'SqlReporting';
      doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'SqlReporting', Scope: 'DEMO' }, { Name: 'SqlReporting', Scope: 'contoso.com' }];
    });
    await cp.apply(windowsPod('reporting', { credentialSpec: denied }));
    const describe = await until('kubectl describe pod reporting shows the failed start', 60_000, async () => {
      const text = await cp.kubectlOk(['describe', 'pod', 'reporting']);
      return /Reason:\s+(RunContainerError|CrashLoopBackOff)/.test(text) && /Warning\s+Failed\s+.*kubelet\s+Error: /.test(text) ? text : undefined;
    });
    expect(describe).to.match(/Node:\s+winsim-1\/127\.0\.0\.1/);
    expect(describe).to.include('SqlReporting');
    // getPhase counts a waiting container that terminated before as stopped: with restartPolicy
    // Always the phase is Running, as for any CrashLoopBackOff pod (kubelet_pods.go).
    const status = (await podJson('reporting')).status.containerStatuses[0];
    expect(['RunContainerError', 'CrashLoopBackOff']).to.include(status.state.waiting.reason);
    expect(status.ready).to.equal(false);
    expect(status.lastState.terminated.reason).to.equal('StartError');
  });

  it("reads the GMSA KEP's ConfigMap as the node: the Node authorizer refuses it (no relationship), CreateContainerConfigError", async () => {
    await cp.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'webserver-credspec', namespace: 'default' }, data: { 'gmsa-cred-spec': KEP_EXAMPLE_CREDENTIAL_SPEC } });
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'kep-configmap', namespace: 'default', annotations: { 'pod.alpha.kubernetes.io/windows-gmsa-config-map': 'webserver-credspec' } },
      spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'app', image: SERVERCORE, command: ['ping', '-t', 'localhost'] }] },
    });
    const waiting = await until('kep-configmap waiting', 30_000, async () => (await podJson('kep-configmap')).status.containerStatuses?.[0]?.state?.waiting);
    expect(waiting.reason).to.equal('CreateContainerConfigError');
    // The Node authorizer's text (plugin/pkg/auth/authorizer/node/node_authorizer.go, v1.34).
    expect(waiting.message).to.equal(
      'cannot read GMSA ConfigMap default/webserver-credspec: configmaps "webserver-credspec" is forbidden: User "system:node:winsim-1" cannot get resource "configmaps" in API group "" in the namespace "default": no relationship found between node \'winsim-1\' and this object',
    );
  });

  it('refuses a Linux pod bound to the node: PodOSNotSupported, phase Failed', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'linux-app', namespace: 'default' },
      spec: { nodeName: 'winsim-1', os: { name: 'linux' }, containers: [{ name: 'app', image: 'registry.k8s.io/e2e-test-images/busybox:1.29-2' }] },
    });
    const pod = await until('linux-app Failed', 30_000, async () => {
      const p = await podJson('linux-app');
      return p.status.phase === 'Failed' ? p : undefined;
    });
    expect(pod.status.reason).to.equal('PodOSNotSupported');
    expect(pod.status.message).to.equal("Pod was rejected: Failed to admit pod as the OS field doesn't match node OS");
    expect(await cp.kubectlOk(['get', 'pod', 'linux-app'])).to.match(/^linux-app\s+0\/1\s+PodOSNotSupported\s/m);
    const ps = await crictlJson(endpoint1(), ['pods', '--label', 'io.kubernetes.pod.name=linux-app', '-o', 'json']);
    expect(ps.items).to.deep.equal([]);
  });

  // The kubelet reads the RuntimeClass through the API as the node (runtimeclass_manager.go v1.34)
  // and sends its handler to RunPodSandbox; a handler the runtime has not configured is the
  // runtime's refusal, reported as FailedCreatePodSandBox "Failed to create pod sandbox: …".
  it('sends the RuntimeClass handler read from the API server to RunPodSandbox', async () => {
    await cp.apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'sim-unknown' }, handler: 'sim-unknown-handler' });
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'rc-pod', namespace: 'default' },
      spec: { nodeName: 'winsim-1', runtimeClassName: 'sim-unknown', containers: [{ name: 'app', image: SERVERCORE }] },
    });
    const message = await until('the FailedCreatePodSandBox event', 30_000, async () => {
      const out = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=rc-pod,reason=FailedCreatePodSandBox', '-o', 'custom-columns=MESSAGE:.message', '--no-headers']);
      return out.trim() === '' ? undefined : out.trim();
    });
    expect(message).to.match(/^Failed to create pod sandbox: rpc error: code = \w+ desc = .*sim-unknown-handler/);
  });

  // getPullSecretsForPod (kubelet_pods.go v1.34): a pull secret the node cannot read is named in a
  // Warning event and the pull goes on without it.
  it('names an imagePullSecret it cannot read: FailedToRetrieveImagePullSecret, and still runs the pod', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'no-regcred', namespace: 'default' },
      spec: { nodeName: 'winsim-1', imagePullSecrets: [{ name: 'regcred-missing' }], containers: [{ name: 'app', image: SERVERCORE, imagePullPolicy: 'Always', command: ['ping', '-t', 'localhost'] }] },
    });
    const event = await until('the FailedToRetrieveImagePullSecret event', 30_000, async () => {
      const out = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=no-regcred,reason=FailedToRetrieveImagePullSecret', '-o', 'custom-columns=TYPE:.type,MESSAGE:.message', '--no-headers']);
      return out.trim() === '' ? undefined : out.trim();
    });
    expect(event).to.equal('Warning   Unable to retrieve some image pull secrets (regcred-missing); attempting to pull the image may not succeed.');
    await until('no-regcred Running', 30_000, async () => ((await podJson('no-regcred')).status.phase === 'Running' ? true : undefined));
  });

  // predicate.go v1.34 InsufficientResourceError, reason OutOfcpu, against the node's allocatable
  // (--cpu 4 by default: 4000 millicores).
  it('refuses a pod that asks for more cpu than the node has: OutOfcpu, with a Warning event', async () => {
    await cp.apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'too-big', namespace: 'default' },
      spec: { nodeName: 'winsim-1', containers: [{ name: 'app', image: SERVERCORE, resources: { requests: { cpu: '64' } } }] },
    });
    const pod = await until('too-big Failed', 30_000, async () => {
      const p = await podJson('too-big');
      return p.status.phase === 'Failed' ? p : undefined;
    });
    expect(pod.status.reason).to.equal('OutOfcpu');
    expect(pod.status.message).to.match(/^Pod was rejected: Node didn't have enough resource: cpu, requested: 64000, used: \d+, capacity: 4000$/);
    const events = await until('the OutOfcpu event', 30_000, async () => {
      const out = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=too-big,reason=OutOfcpu', '-o', 'custom-columns=TYPE:.type,SOURCE:.source.component', '--no-headers']);
      return out.trim() === '' ? undefined : out;
    });
    expect(events).to.match(/^Warning\s+kubelet$/m);
  });

  it('kubectl delete stops the containers gracefully and the pod goes away (Killing event, no runtime leftovers)', async () => {
    const uid = (await podJson('webapp')).metadata.uid as string;
    const deleted = await cp.kubectl(['delete', 'pod', 'webapp', '--timeout', '60s'], { timeoutMs: 70_000 });
    expect(deleted.code, deleted.stderr).to.equal(0);
    expect(deleted.stdout).to.include('pod "webapp" deleted');
    const events = await cp.kubectlOk(['get', 'events', '--field-selector', `involvedObject.uid=${uid}`, '-o', 'custom-columns=REASON:.reason,MESSAGE:.message', '--no-headers']);
    expect(events).to.match(/^Killing\s+Stopping container app$/m);
    await until('the runtime has no sandbox of webapp', 20_000, async () => {
      const ps = await crictlJson(endpoint1(), ['pods', '--label', `io.kubernetes.pod.uid=${uid}`, '-o', 'json']);
      return ps.items.length === 0 ? true : undefined;
    });
  });

  it('a pod held by a finalizer is DELETEd once: later updates of it send no second DELETE (status_manager.go)', async () => {
    // Grace 5 s: the kubelet's DELETE with grace 0 shortens it, an update the kubelet sees again.
    const pod = windowsPod('held') as { metadata: Record<string, unknown> };
    pod.metadata.finalizers = ['example.com/hold'];
    await cp.apply(pod);
    await until('pod held Running', 60_000, async () => ((await podJson('held')).status.phase === 'Running' ? true : undefined));
    await cp.kubectlOk(['delete', 'pod', 'held', '--wait=false']);
    const deletes = (): number => node1!.lines.filter((l) => l.includes('pod terminated and deleted') && l.includes('default/held')).length;
    await until('the kubelet deleted held', 30_000, async () => (deletes() > 0 ? true : undefined));
    // The finalizer keeps the pod: every later update of it (its deletion shortened to 0 s, a
    // label) reaches the kubelet, which deleted it already.
    for (const value of ['a', 'b']) await cp.kubectlOk(['label', 'pod', 'held', `touched=${value}`, '--overwrite']);
    await sleep(2_000);
    expect(deletes()).to.equal(1);
    expect((await podJson('held')).status.phase).to.equal('Failed');
    await cp.kubectlOk(['patch', 'pod', 'held', '--type', 'json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
  });

  it('reconnects after the API server restarts: lease renewed and new pods run', async () => {
    const before = (await kubectlJson(['get', 'lease', '-n', 'kube-node-lease', 'winsim-1'])).spec.renewTime as string;
    await cp.stopApiServer();
    await sleep(3_000);
    await cp.startApiServer();
    await until('lease renewed after the restart', 40_000, async () => {
      const lease = await kubectlJson(['get', 'lease', '-n', 'kube-node-lease', 'winsim-1']);
      return lease.spec.renewTime > before ? true : undefined;
    });
    expect(node1!.logged('failed to update lease, will retry') || node1!.logged('pod list/watch failed, will retry')).to.equal(true);
    await cp.apply(windowsPod('after-restart'));
    await until('after-restart Running', 60_000, async () => ((await podJson('after-restart')).status.phase === 'Running' ? true : undefined));
  });

  it("refuses to start as another node than the credentials' own, naming the node and the API server's reason", async () => {
    const res = await runProcess(process.execPath, [cliPath, 'node', '--kubeconfig', kubeconfig1, '--hostname-override', 'winsim-9', '--state-dir', join(dir, 'impostor'), '--port', '0'], { killAfterMs: 60_000 });
    expect(res.code, res.stderr).to.equal(1);
    expect(res.stderr).to.include(`error: kubeconfig ${kubeconfig1} (server ${cp.server}): cannot register node winsim-9: POST /api/v1/nodes: 403 nodes "winsim-9" is forbidden: node "winsim-1" is not allowed to modify node "winsim-9"`);
    expect((await cp.kubectl(['get', 'node', 'winsim-9'])).code).to.equal(1);
  });

  it('registers the Node again after it is deleted', async () => {
    const oldUid = (await kubectlJson(['get', 'node', 'winsim-1'])).metadata.uid as string;
    await cp.kubectlOk(['delete', 'node', 'winsim-1']);
    // The next status update (every 10 s) finds the Node gone and registers it again.
    const node = await until('winsim-1 registered again', 40_000, async () => {
      const res = await cp.kubectl(['get', 'node', 'winsim-1', '-o', 'json']);
      return res.code === 0 ? JSON.parse(res.stdout) : undefined;
    });
    expect(node.metadata.uid).to.not.equal(oldUid);
    expect(node.metadata.labels['kubernetes.io/os']).to.equal('windows');
    expect(node.status.conditions.find((c: any) => c.type === 'Ready').status).to.equal('True');
    expect(node1!.logged('node not found in the API server; registering it again')).to.equal(true);
  });

  it('after SIGKILL and a restart of the node process, the kubelet adopts its pods from the durable state (no duplicate containers)', async () => {
    const before = (await podJson('after-restart')).status;
    const containerId = before.containerStatuses[0].containerID as string;
    await node1!.kill();
    node1 = await startNodeProcess(node1Args());
    await until('the restarted node adopted after-restart', 30_000, async () => (node1!.logged('adopted pod from the runtime') ? true : undefined));
    expect(node1.logged('runtime state recovered')).to.equal(true);
    // A few syncs and status updates later: still the one container, never started again.
    await sleep(3_000);
    const after = (await podJson('after-restart')).status;
    expect(after.containerStatuses[0]).to.include({ containerID: containerId, ready: true, restartCount: 0 });
    expect(after.containerStatuses[0].state.running.startedAt).to.equal(before.containerStatuses[0].state.running.startedAt);
    expect(after.podIP).to.equal(before.podIP);
    const ps = await crictlJson(endpoint1(), ['ps', '-a', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(ps.containers.map((c: any) => `cri-winsim://${c.id}`)).to.deep.equal([containerId]);
    const pods = await crictlJson(endpoint1(), ['pods', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(pods.items).to.have.length(1);
    // The recovered container answers exec through the API server, the kubelet server and the runtime's streaming server.
    const exec = await cp.kubectl(['exec', 'after-restart', '--', 'hostname'], { timeoutMs: 30_000 });
    expect(exec.stdout.trim(), exec.stderr).to.equal('after-restart');
  });

  it('with --simulate-reboot, the kubelet replaces the pod\'s sandbox (not ready) and runs its container again, once', async () => {
    const before = (await podJson('after-restart')).status.containerStatuses[0].containerID as string;
    await node1!.kill();
    node1 = await startNodeProcess([...node1Args(), '--simulate-reboot']);
    const after = await until('after-restart running in a new sandbox', 60_000, async () => {
      const s = (await podJson('after-restart')).status.containerStatuses?.[0];
      return s?.ready === true && s.containerID !== before ? (s.containerID as string) : undefined;
    });
    expect(node1.logged('pod sandbox not ready: creating a new one')).to.equal(true);
    await sleep(2_000);
    const pods = await crictlJson(endpoint1(), ['pods', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(pods.items.map((p: any) => p.state)).to.deep.equal(['SANDBOX_READY']);
    const ps = await crictlJson(endpoint1(), ['ps', '-a', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(ps.containers.map((c: any) => `cri-winsim://${c.id}`)).to.deep.equal([after]);
  });

  it('with --ephemeral, a node process restarted after SIGKILL runs each pod again, once', async () => {
    const before = (await podJson('after-restart')).status.containerStatuses[0].containerID as string;
    await node1!.kill();
    node1 = await startNodeProcess([...node1Args(), '--ephemeral']);
    // --ephemeral resets the runtime state at start: the crash took the old container along, and
    // the restarted node runs the pod again, once.
    const after = await until('after-restart reported with its new container', 60_000, async () => {
      const s = (await podJson('after-restart')).status.containerStatuses?.[0];
      return s?.ready === true && s.containerID !== before ? (s.containerID as string) : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\n${node1!.lines.filter((l) => !l.includes('"level":30')).slice(-20).join('\n')}`);
    });
    await sleep(2_000);
    const reported = (await podJson('after-restart')).status;
    expect(reported.podIPs, 'one pod IP: the new sandbox replaced the old one').to.deep.equal([{ ip: reported.podIP }]);
    const ps = await crictlJson(endpoint1(), ['ps', '-a', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(ps.containers.map((c: any) => `cri-winsim://${c.id}`)).to.deep.equal([after]);
    const pods = await crictlJson(endpoint1(), ['pods', '--label', 'io.kubernetes.pod.name=after-restart', '-o', 'json']);
    expect(pods.items).to.have.length(1);
  });

  it('runs several nodes in one process, each with its own loopback address, socket and computer account', async () => {
    const multiDir = join(dir, 'multi');
    const multiArgs = ['node', '--kubeconfig', cp.adminKubeconfig, '--nodes', '2', '--node-name-prefix', 'multi', '--state-dir', multiDir,
      '--node-labels', 'team=identity', '--register-with-taints', 'os=windows:NoSchedule', '--max-pods', '30'];
    let multi = await startNodeProcess(multiArgs);
    const nodes = await kubectlJson(['get', 'nodes', '-l', 'kubernetes.io/os=windows']);
    const byName = Object.fromEntries(nodes.items.map((n: any) => [n.metadata.name, n]));
    expect(byName['multi-1'].status.addresses[0]).to.deep.equal({ type: 'InternalIP', address: '127.0.1.1' });
    expect(byName['multi-2'].status.addresses[0]).to.deep.equal({ type: 'InternalIP', address: '127.0.1.2' });
    expect(byName['multi-2'].status.conditions.find((c: any) => c.type === 'Ready').status).to.equal('True');
    expect(byName['multi-2'].metadata.labels).to.include({ team: 'identity', 'kubernetes.io/hostname': 'multi-2' });
    // Its own taint stays; the not-ready one TaintNodesByCondition added goes once the node is Ready.
    const taints = await until('multi-2 without the not-ready taint', 60_000, async () => {
      const t = (await kubectlJson(['get', 'node', 'multi-2'])).spec.taints as { key: string }[];
      return t.some((x) => x.key === 'node.kubernetes.io/not-ready') ? undefined : t;
    });
    expect(taints).to.deep.equal([{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
    expect(byName['multi-2'].status.capacity.pods).to.equal('30');
    // WebApplication1 is retrievable through WebAppHosts, of which the template's WINNODE1$ is a
    // member: MULTI-2$ took that membership, so the gMSA works on it.
    await cp.apply(windowsPod('on-multi-2', { credentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC, nodeName: 'multi-2' }));
    const pod = await until('on-multi-2 Running', 60_000, async () => {
      const p = await podJson('on-multi-2');
      return p.status.phase === 'Running' ? p : undefined;
    });
    expect(pod.status.hostIP).to.equal('127.0.1.2');
    expect(pod.status.podIP).to.match(/^127\.11\.1\.\d+$/);
    const target = { endpoint: `unix://${join(multiDir, 'multi-2', 'cri.sock')}`, dir: join(multiDir, 'multi-2') };
    const ps = await crictlJson(target, ['ps', '--label', 'io.kubernetes.pod.name=on-multi-2', '-o', 'json']);
    expect(ps.containers).to.have.length(1);
    const whoami = await runCrictlExec(target, ps.containers[0].id, ['hostname']);
    expect(whoami.trim()).to.equal('on-multi-2');

    // SIGKILL and a restart: each node reloads its own state (its rows of the process's one
    // metadata database, src/commands/node-process-shares.ts), and multi-2 adopts its pod.
    expect(existsSync(join(multiDir, 'metadata.db'))).to.equal(true);
    expect(existsSync(join(multiDir, 'multi-1', 'runtime', 'metadata.db'))).to.equal(false);
    expect(existsSync(join(multiDir, 'multi-2', 'runtime', 'metadata.db'))).to.equal(false);
    await multi.kill();
    multi = await startNodeProcess(multiArgs);
    await until('multi-2 adopted on-multi-2', 30_000, async () => (multi.logged('adopted pod from the runtime') ? true : undefined));
    await sleep(2_000);
    const again = await crictlJson(target, ['ps', '-a', '--label', 'io.kubernetes.pod.name=on-multi-2', '-o', 'json']);
    expect(again.containers.map((c: any) => c.id)).to.deep.equal([ps.containers[0].id]);
    const other = { endpoint: `unix://${join(multiDir, 'multi-1', 'cri.sock')}`, dir: join(multiDir, 'multi-1') };
    expect((await crictlJson(other, ['pods', '-o', 'json'])).items).to.deep.equal([]);
    expect((await podJson('on-multi-2')).status.containerStatuses[0]).to.include({ containerID: `cri-winsim://${ps.containers[0].id}`, restartCount: 0, ready: true });
  });

  // kubernetes v1.34 pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer (event
  // Failed `Error: <message>`, reason RunContainerError); pkg/kubelet/container/helpers.go
  // ShouldContainerBeRestarted (a container left created is started again); doBackOff in
  // kuberuntime_manager.go counts exited containers only, so no CrashLoopBackOff here; the pod
  // worker tries the failed sync again after backOffPeriod, 10 s (pod_workers.go completeWork).
  it('a StartContainer fault: RunContainerError with the message and a Failed event; the created container is started again', async () => {
    const runtimeDir = join(dir, 'rt-fault');
    const target = { endpoint: `unix://${join(runtimeDir, 'cri.sock')}`, dir: runtimeDir };
    const runtime = await startNodeProcess(['runtime', '--listen', target.endpoint, '--state-dir', runtimeDir, '--inject-fault', 'StartContainer=Unknown'], { readyText: 'cri-winsim runtime listening' });
    const kubelet = await startNodeProcess(['kubelet', '--kubeconfig', await cp.nodeKubeconfig('winsim-2'), '--hostname-override', 'winsim-2', '--container-runtime-endpoint', target.endpoint, '--root-dir', join(dir, 'kubelet-fault'), '--port', '0']);
    const message = 'fault injected by cri-winsim (--inject-fault StartContainer=Unknown): StartContainer failed before doing anything';
    try {
      await cp.apply(windowsPod('startfault', { nodeName: 'winsim-2', grace: 1 }));
      const first = await until('startfault RunContainerError', 60_000, async () => {
        const s = (await podJson('startfault')).status.containerStatuses?.[0];
        return s?.state?.waiting?.reason === 'RunContainerError' ? s : undefined;
      });
      expect(first.state.waiting.message).to.equal(message);
      const events = await cp.kubectlOk(['get', 'events', '--field-selector', 'involvedObject.name=startfault', '-o', 'custom-columns=REASON:.reason,MESSAGE:.message', '--no-headers']);
      expect(events.split('\n').map((l) => l.replace(/^(\S+)\s+/, '$1 '))).to.include(`Failed Error: ${message}`);
      const again = await until('startfault started again', 45_000, async () => {
        const s = (await podJson('startfault')).status.containerStatuses?.[0];
        return s?.restartCount >= 1 ? s : undefined;
      });
      expect(again.state.waiting).to.deep.equal({ reason: 'RunContainerError', message });
      const ps = await crictlJson(target, ['ps', '-a', '--label', 'io.kubernetes.pod.name=startfault', '-o', 'json']);
      expect(ps.containers.length).to.be.at.least(2);
      expect(new Set(ps.containers.map((c: any) => c.state))).to.deep.equal(new Set(['CONTAINER_CREATED']));
    } finally {
      await cp.kubectl(['delete', 'pod', 'startfault', '--grace-period=0', '--force']);
      await kubelet.stop();
      await runtime.stop();
    }
  });

  it('a kubelet restarted against a runtime that kept running adopts its containers instead of starting them again', async () => {
    const runtimeDir = join(dir, 'rt2');
    const target = { endpoint: `unix://${join(runtimeDir, 'cri.sock')}`, dir: runtimeDir };
    await startNodeProcess(['runtime', '--listen', target.endpoint, '--state-dir', runtimeDir], { readyText: 'cri-winsim runtime listening' });
    const kubeletArgs = ['kubelet', '--kubeconfig', await cp.nodeKubeconfig('winsim-2'), '--hostname-override', 'winsim-2', '--container-runtime-endpoint', target.endpoint, '--root-dir', join(dir, 'kubelet2'), '--port', '0'];
    let kubelet = await startNodeProcess(kubeletArgs);
    await cp.apply(windowsPod('adopted', { nodeName: 'winsim-2' }));
    const first = await until('adopted Running', 60_000, async () => {
      const p = await podJson('adopted');
      return p.status.phase === 'Running' ? (p.status.containerStatuses[0].containerID as string) : undefined;
    });
    await kubelet.kill();
    kubelet = await startNodeProcess(kubeletArgs);
    await until('the restarted kubelet adopted the pod', 30_000, async () => (kubelet.logged('adopted pod from the runtime') ? true : undefined));
    const ps = await crictlJson(target, ['ps', '-a', '--label', 'io.kubernetes.pod.name=adopted', '-o', 'json']);
    expect(ps.containers.map((c: any) => `cri-winsim://${c.id}`)).to.deep.equal([first]);
    expect((await podJson('adopted')).status.containerStatuses[0]).to.include({ containerID: first, ready: true, restartCount: 0 });
  });
});

describe('node mode: bad input', function () {
  this.timeout(30_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cwn-bad-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names the kubeconfig file that does not exist', async () => {
    const res = await runProcess(process.execPath, [cliPath, 'node', '--kubeconfig', join(dir, 'missing.kubeconfig'), '--hostname-override', 'w1', '--state-dir', join(dir, 's')], { killAfterMs: 20_000 });
    expect(res.code).to.equal(1);
    expect(res.stderr).to.include(`error: kubeconfig ${join(dir, 'missing.kubeconfig')}: ENOENT: no such file or directory`);
  });

  it('names the kubeconfig and the server it cannot reach, and creates nothing', async () => {
    const kubeconfig = join(dir, 'unreachable.kubeconfig');
    await writeFile(kubeconfig, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'x',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
      users: [{ name: 'u', user: { token: 'abc' } }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    }));
    const res = await runProcess(process.execPath, [cliPath, 'node', '--kubeconfig', kubeconfig, '--hostname-override', 'w1', '--state-dir', join(dir, 's')], { killAfterMs: 20_000 });
    expect(res.code).to.equal(1);
    expect(res.stderr).to.include(`error: cannot reach the API server of kubeconfig ${kubeconfig} (server https://127.0.0.1:1): connect ECONNREFUSED 127.0.0.1:1`);
    expect(existsSync(join(dir, 's'))).to.equal(false);
  });
});
