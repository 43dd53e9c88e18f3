// The pods people bring, on simulated nodes of a real cluster whose control plane keeps the
// upstream defaults (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl
// built from the pinned modules under tools/): a Deployment of a team's own image nobody
// described, the Windows version rule with a RuntimeClass for Hyper-V, a Linux-only image, a
// private registry with and without its pull secret, the upstream e2e images and the Windows e2e
// commands, and the kubelet's own admission.
// Upstream texts pinned here: containerd 2.x internal/cri/server/images/image_pull.go and
// core/remotes/docker/authorizer.go (pull failures), hcsshim internal/hcs/errors.go
// (HCS_E_IMAGE_MISMATCH), kubernetes v1.34 pkg/kubelet/lifecycle/predicate.go (admission reasons),
// pkg/kubelet/images/image_manager.go (ErrImagePull, ImagePullBackOff).
import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireControlPlaneTools, startControlPlane, type ControlPlane } from '../support/control-plane.js';
import { getLocal, withPortForward } from '../support/port-forward.js';
import { liveNodeProcesses, startNodeProcess, type NodeProcess } from '../support/node-process.js';
import { until } from '../support/wait.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from '../runtime/windows/kep-example.js';
import { oneWorkerAtATime } from '../support/one-worker-at-a-time.js';

const HOST_MISMATCH = 'The container operating system does not match the host operating system.';

describe('the pods people bring, on simulated nodes of a stock control plane', function () {
  // Its processes use the program's default pod ranges and node addresses.
  oneWorkerAtATime('default-addresses');
  this.timeout(180_000);
  let cp: ControlPlane;
  let dir: string;
  let nodes: NodeProcess | undefined;
  const kubectlJson = async <T = any>(args: string[]): Promise<T> => JSON.parse(await cp.kubectlOk([...args, '-o', 'json'])) as T;
  const podJson = (name: string) => kubectlJson(['get', 'pod', name]);
  /** The pod's first container reaches one of these waiting reasons. */
  const waitingFor = (name: string, reasons: readonly string[]) => until(`${name}: ${reasons.join(' or ')}`, 90_000, async () => {
    const reason = (await podJson(name)).status?.containerStatuses?.[0]?.state?.waiting?.reason;
    return reasons.includes(reason) ? reason as string : undefined;
  });
  /** The kubelet's events about a pod, as `kubectl describe` lists them: `Reason: message`. */
  const podEvents = async (name: string): Promise<string[]> =>
    (await kubectlJson(['get', 'events', '--field-selector', `involvedObject.name=${name}`])).items.map((e: any) => `${e.reason}: ${e.message}`);
  /** Waits for the kubelet's event of this reason whose message includes `text`. */
  const eventWith = (name: string, reason: string, text: string) => until(`${name}: a ${reason} event with ${text}`, 90_000, async () =>
    (await podEvents(name)).find((e) => e.startsWith(`${reason}: `) && e.includes(text)));

  before(async function () {
    this.timeout(300_000);
    requireControlPlaneTools(this);
    dir = await mkdtemp(join(tmpdir(), 'cwb-'));
    cp = await startControlPlane({ nodeNames: ['bring-1', 'bring-2'] });
    const images = join(dir, 'images.yaml');
    await writeFile(images, [
      'registries:',
      '  - host: fabrikam.azurecr.io',
      '    username: ci',
      '    password: s3cret',
      '',
    ].join('\n'));
    nodes = await startNodeProcess(['node', '--kubeconfig', cp.adminKubeconfig, '--nodes', '2', '--node-name-prefix', 'bring',
      '--state-dir', join(dir, 'nodes'), '--port', '0', '--client-ca-file', cp.kubeletClientCaFile, '--images', images], { readyTimeoutMs: 90_000 });
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('a Deployment of an image no catalogue knows, with a gMSA and an httpGet readiness probe, is Ready and answers through port-forward', async () => {
    await cp.apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'webapp', namespace: 'default' },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'webapp' } },
        template: {
          metadata: { labels: { app: 'webapp' } },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'windows' },
            securityContext: { windowsOptions: { gmsaCredentialSpecName: 'webapplication1', gmsaCredentialSpec: KEP_EXAMPLE_CREDENTIAL_SPEC } },
            containers: [{
              name: 'web',
              image: 'contoso.azurecr.io/webapp:1.0',
              ports: [{ containerPort: 80 }],
              readinessProbe: { httpGet: { path: '/', port: 80 }, periodSeconds: 1 },
            }],
          },
        },
      },
    });
    await cp.kubectlOk(['rollout', 'status', 'deployment/webapp', '--timeout=150s'], { timeoutMs: 160_000 });
    const pods = await kubectlJson(['get', 'pods', '-l', 'app=webapp']);
    expect(pods.items).to.have.length(3);
    for (const p of pods.items) {
      expect(p.spec.nodeName).to.match(/^bring-[12]$/);
      expect(p.status.conditions.find((c: any) => c.type === 'Ready').status).to.equal('True');
      expect(p.status.podIP).to.match(/^127\.11\.\d+\.\d+$/);
    }
    const logs = await cp.kubectlOk(['logs', pods.items[0].metadata.name]);
    expect(logs).to.include('webapp');
    const page = await withPortForward(cp, 'deployment/webapp', 80, (port) => getLocal(port, '/'));
    expect(page.status).to.equal(200);
    expect(page.body).to.include('WebApplication1');
  });

  // The commands test/e2e/windows (v1.34) runs in its pods: gmsa_full.go's `nltest /PARENTDOMAIN`,
  // security_context.go's `cmd /S /C echo %username%`, and agnhost's netexec (test/images/agnhost).
  it('the upstream e2e images pull on a Windows node and the Windows e2e commands answer', async () => {
    const nltest = await cp.kubectlOk(['exec', 'deployment/webapp', '--', 'nltest', '/PARENTDOMAIN']);
    expect(nltest.toLowerCase()).to.include('contoso.com');
    await cp.apply({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'agnhost', namespace: 'default' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        containers: [{ name: 'agnhost', image: 'registry.k8s.io/e2e-test-images/agnhost:2.52', args: ['netexec', '--http-port=8080'], ports: [{ containerPort: 8080 }] }],
      },
    });
    await until('agnhost Running', 90_000, async () => ((await podJson('agnhost')).status.phase === 'Running' ? true : undefined));
    const hostname = await withPortForward(cp, 'pod/agnhost', 8080, (port) => getLocal(port, '/hostname'));
    expect([hostname.status, hostname.body]).to.deep.equal([200, 'agnhost']);
    const user = await cp.kubectlOk(['exec', 'agnhost', '--', 'cmd', '/S', '/C', 'echo %username%']);
    expect(user.trim()).to.equal('ContainerAdministrator');
  });

  it('a Linux-only image fails its pull with containerd\'s platform text', async () => {
    await cp.apply({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'linux-only', namespace: 'default' },
      spec: { nodeSelector: { 'kubernetes.io/os': 'windows' }, containers: [{ name: 'nginx', image: 'docker.io/library/nginx:1.27' }] },
    });
    await waitingFor('linux-only', ['ErrImagePull', 'ImagePullBackOff']);
    const event = await eventWith('linux-only', 'Failed', 'no match for platform in manifest');
    expect(event).to.include('Failed to pull image "docker.io/library/nginx:1.27": ');
    expect(event).to.include('failed to pull and unpack image "docker.io/library/nginx:1.27": no match for platform in manifest: not found');
  });

  it('an ltsc2019 image is refused under process isolation and runs with a RuntimeClass for Hyper-V', async () => {
    await cp.apply({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'hyperv' }, handler: 'runhcs-wcow-hypervisor' });
    const pod = (name: string, runtimeClassName?: string) => ({
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        ...(runtimeClassName === undefined ? {} : { runtimeClassName }),
        containers: [{ name: 'app', image: 'contoso.azurecr.io/timesheets:1.0-ltsc2019' }],
      },
    });
    await cp.apply(pod('timesheets-process'));
    await waitingFor('timesheets-process', ['RunContainerError', 'CrashLoopBackOff']);
    expect(await eventWith('timesheets-process', 'Failed', HOST_MISMATCH)).to.match(/^Failed: Error: /);
    await cp.apply(pod('timesheets-hyperv', 'hyperv'));
    await until('timesheets-hyperv Running', 90_000, async () => ((await podJson('timesheets-hyperv')).status.phase === 'Running' ? true : undefined));
  });

  it('a private registry refuses a pull without its secret and accepts one with it', async () => {
    const pod = (name: string, secret?: string) => ({
      apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
      spec: {
        nodeSelector: { 'kubernetes.io/os': 'windows' },
        ...(secret === undefined ? {} : { imagePullSecrets: [{ name: secret }] }),
        containers: [{ name: 'app', image: 'fabrikam.azurecr.io/payroll:2.0' }],
      },
    });
    await cp.apply(pod('payroll-anonymous'));
    await waitingFor('payroll-anonymous', ['ErrImagePull', 'ImagePullBackOff']);
    const event = await eventWith('payroll-anonymous', 'Failed', '401 Unauthorized');
    expect(event).to.include('failed to fetch anonymous token: unexpected status from GET request to https://fabrikam.azurecr.io/oauth2/token?scope=repository%3Apayroll%3Apull&service=fabrikam.azurecr.io: 401 Unauthorized');
    await cp.kubectlOk(['create', 'secret', 'docker-registry', 'fabrikam', '--docker-server=fabrikam.azurecr.io', '--docker-username=ci', '--docker-password=s3cret']);
    await cp.apply(pod('payroll', 'fabrikam'));
    await until('payroll Running', 90_000, async () => ((await podJson('payroll')).status.phase === 'Running' ? true : undefined));
    // Nothing of the credentials in the node's log.
    expect(nodes!.logged('s3cret')).to.equal(false);
  });

  it('the kubelet refuses what its own admission refuses, with its reasons', async () => {
    await cp.apply({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'too-big', namespace: 'default' },
      spec: { nodeName: 'bring-1', containers: [{ name: 'app', image: 'contoso.azurecr.io/webapp:1.0', resources: { requests: { cpu: '100' } } }] },
    });
    const tooBig = await until('too-big Failed', 60_000, async () => {
      const p = await podJson('too-big');
      return p.status.phase === 'Failed' ? p : undefined;
    });
    expect(tooBig.status.reason).to.equal('OutOfcpu');
    await cp.apply({
      apiVersion: 'v1', kind: 'Pod', metadata: { name: 'linux-label', namespace: 'default', labels: { 'kubernetes.io/os': 'linux' } },
      spec: { nodeName: 'bring-2', containers: [{ name: 'app', image: 'contoso.azurecr.io/webapp:1.0' }] },
    });
    const labelled = await until('linux-label Failed', 60_000, async () => {
      const p = await podJson('linux-label');
      return p.status.phase === 'Failed' ? p : undefined;
    });
    expect(labelled.status.reason).to.equal('PodOSSelectorNodeLabelDoesNotMatch');
  });
});
