// `cri-winsim kubelet` end to end, as a user runs it: the compiled CLI against a runtime started
// with test/support/runtime.ts, checked with the real crictl.
import { expect } from 'chai';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crictlJson, runCrictl } from '../support/crictl.js';
import { repoRoot, requireCriTool } from '../support/paths.js';
import { startRuntime, type RuntimeHandle } from '../support/runtime.js';
import { eventually, runKubelet, startSyncLoop } from './support/kubelet-cli.js';

const examples = join(repoRoot, 'examples');
const cluster = join(examples, 'cluster');
const pods = (name: string) => join(examples, 'pods', name);

interface CrictlContainer {
  id: string;
  state: string;
  metadata: { name: string; attempt: number };
  labels: Record<string, string>;
}

async function containersOf(rt: RuntimeHandle, pod: string): Promise<CrictlContainer[]> {
  const all = (await crictlJson<{ containers: CrictlContainer[] }>(rt, ['ps', '-a', '-o', 'json'])).containers;
  return all.filter((c) => c.labels['io.kubernetes.pod.name'] === pod);
}

async function sandboxNames(rt: RuntimeHandle): Promise<string[]> {
  return (await crictlJson<{ items: { metadata: { name: string } }[] }>(rt, ['pods', '-o', 'json'])).items.map((p) => p.metadata.name).sort();
}

/** The OCI spec crictl inspect shows under info.runtimeSpec (containerd's layout). */
async function runtimeSpec(rt: RuntimeHandle, id: string): Promise<{ process: { user: { username?: string } }; windows?: { credentialSpec?: unknown } }> {
  return (await crictlJson(rt, ['inspect', id])).info.runtimeSpec;
}

/** The gMSA a credential spec names, whether the runtime keeps it as a JSON string or an object. */
function gmsaOf(credentialSpec: unknown): string | undefined {
  if (credentialSpec === undefined || credentialSpec === null || credentialSpec === '') return undefined;
  const doc = (typeof credentialSpec === 'string' ? JSON.parse(credentialSpec) : credentialSpec) as { DomainJoinConfig?: { MachineAccountName?: string } };
  return doc.DomainJoinConfig?.MachineAccountName;
}

interface PodJson {
  metadata: { name: string; namespace: string; uid: string };
  status: {
    phase: string;
    containerStatuses: { name: string; ready: boolean; restartCount: number; state: { waiting?: { reason: string; message?: string }; running?: object; terminated?: { exitCode: number; reason: string } } }[];
  };
}

const itemsOf = (json: string): PodJson[] => {
  const parsed = JSON.parse(json) as PodJson | { kind: 'List'; items: PodJson[] };
  return 'items' in parsed ? parsed.items : [parsed];
};

describe('cri-winsim kubelet run: the two pods of the Windows security context KEP', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;
  let result: Awaited<ReturnType<typeof runKubelet>>;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime();
    result = await runKubelet([
      'run', pods('gmsa-pod-level.yaml'), pods('gmsa-container-level.yaml'),
      '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--wait-ready', '--timeout', '30s', '-o', 'json',
    ]);
  });
  after(async () => {
    await rt?.stop();
  });

  it('exits 0 with both pods Running and every container ready', () => {
    expect(result.code, result.stderr).to.equal(0);
    const items = itemsOf(result.stdout);
    expect(items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).to.deep.equal(['contoso-apps/webapp-gmsa', 'contoso-apps/webapp-gmsa-with-logger']);
    for (const pod of items) {
      expect(pod.status.phase).to.equal('Running');
      expect(pod.status.containerStatuses.map((c) => [c.name, c.ready])).to.deep.equal([['iis', true], ['logger', true]]);
    }
  });

  it('crictl ps shows the containers under their pod, with the kubelet labels', async () => {
    const containers = await containersOf(rt, 'webapp-gmsa-with-logger');
    expect(containers.map((c) => [c.metadata.name, c.state, c.labels['io.kubernetes.pod.namespace'], c.labels['io.kubernetes.container.name']]).sort()).to.deep.equal([
      ['iis', 'CONTAINER_RUNNING', 'contoso-apps', 'iis'],
      ['logger', 'CONTAINER_RUNNING', 'contoso-apps', 'logger'],
    ]);
    const table = await runCrictl(rt, ['ps']);
    expect(table.stdout).to.match(/\blogger\b.*\bwebapp-gmsa-with-logger\b/);
  });

  it('every container runs as the pod-level RunAsUserName (crictl inspect, crictl exec whoami)', async () => {
    for (const pod of ['webapp-gmsa', 'webapp-gmsa-with-logger']) {
      for (const c of await containersOf(rt, pod)) {
        expect((await runtimeSpec(rt, c.id)).process.user.username, `${pod}/${c.metadata.name}`).to.equal('NT AUTHORITY\\NETWORK SERVICE');
        const whoami = await runCrictl(rt, ['exec', '-s', c.id, 'whoami']);
        expect(whoami.stdout.trim().toLowerCase(), `${pod}/${c.metadata.name}`).to.equal('nt authority\\network service');
      }
    }
  });

  // Needs the runtime's Windows identity wiring (credential spec in the OCI spec).
  it('the credential spec is the pod-level gMSA, except where the second container names its own', async () => {
    const effective: string[][] = [];
    for (const pod of ['webapp-gmsa', 'webapp-gmsa-with-logger']) {
      for (const c of await containersOf(rt, pod)) {
        effective.push([pod, c.metadata.name, gmsaOf((await runtimeSpec(rt, c.id)).windows?.credentialSpec) ?? '(none)']);
      }
    }
    expect(effective.sort()).to.deep.equal([
      ['webapp-gmsa', 'iis', 'WebApplication1'],
      ['webapp-gmsa', 'logger', 'WebApplication1'],
      ['webapp-gmsa-with-logger', 'iis', 'WebApplication1'],
      ['webapp-gmsa-with-logger', 'logger', 'EventLogger'],
    ]);
  });

  it('get lists the pods like kubectl get pods, and a second run of the same file is refused', async () => {
    const get = await runKubelet(['get', 'pods', '-n', 'contoso-apps', '--container-runtime-endpoint', rt.endpoint]);
    expect(get.code, get.stderr).to.equal(0);
    const lines = get.stdout.trimEnd().split('\n');
    expect(lines[0]).to.match(/^NAME +READY +STATUS +RESTARTS +AGE$/);
    expect(lines.slice(1).map((l) => l.split(/ {3,}/).slice(0, 4))).to.deep.equal([
      ['webapp-gmsa', '2/2', 'Running', '0'],
      ['webapp-gmsa-with-logger', '2/2', 'Running', '0'],
    ]);
    const again = await runKubelet(['run', pods('gmsa-pod-level.yaml'), '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.equal(`Error from server (AlreadyExists): error when creating ${JSON.stringify(pods('gmsa-pod-level.yaml'))}: pods "webapp-gmsa" already exists\n`);
    expect(await sandboxNames(rt)).to.deep.equal(['webapp-gmsa', 'webapp-gmsa-with-logger']);
  });
});

describe('cri-winsim kubelet run: runtime failures in pod status (--ad-mode strict)', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;
  let dir: string;
  let result: Awaited<ReturnType<typeof runKubelet>>;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime({ args: ['--ad-mode', 'strict'] });
    dir = await mkdtemp(join(tmpdir(), 'winsim-kubelet-'));
    await writeFile(
      join(dir, 'unknown-user.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: unknown-user\nspec:\n  securityContext:\n    windowsOptions:\n      runAsUserName: NoSuchUser\n' +
        '  containers:\n    - name: app\n      image: mcr.microsoft.com/windows/servercore:ltsc2022\n      command: ["ping", "-t", "localhost"]\n',
    );
    await writeFile(
      join(dir, 'no-image.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: no-image\nspec:\n  containers:\n    - name: app\n      image: mcr.microsoft.com/windows/nanoserver:nope\n',
    );
    result = await runKubelet([
      'run', pods('gmsa-invalid-credspec.yaml'), pods('gmsa-node-not-authorised.yaml'), join(dir, 'unknown-user.yaml'), join(dir, 'no-image.yaml'),
      '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '-o', 'json',
    ]);
  });
  after(async () => {
    await rt?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('exits non-zero, for CI', () => {
    expect(result.code, result.stdout + result.stderr).to.equal(1);
  });

  // The expected texts are the runtime's (REFERENCE §9); the kubelet must pass them on unchanged.
  const cases = [
    { pod: 'webapp-invalid-credspec', message: /credential spec/i },
    { pod: 'reporting-sql', message: /SqlReporting/i },
    { pod: 'unknown-user', message: /The user name or password is incorrect\./ },
  ];
  for (const c of cases) {
    it(`${c.pod}: the kubelet's reason and the runtime's message`, async () => {
      const pod = itemsOf(result.stdout).find((p) => p.metadata.name === c.pod);
      expect(pod, result.stdout).not.to.equal(undefined);
      const status = pod!.status.containerStatuses[0]!;
      expect(status.state.waiting?.reason, JSON.stringify(status)).to.be.oneOf(['RunContainerError', 'CreateContainerError']);
      expect(status.state.waiting?.message).to.match(c.message);
      // When the container was created, the runtime's own status carries the same message.
      const [container] = await containersOf(rt, c.pod);
      if (container !== undefined) {
        const inspected = (await crictlJson(rt, ['inspect', container.id])).status as { message: string; reason: string };
        expect(status.state.waiting?.message).to.include(inspected.message);
      }
    });
  }

  it('a pull failure is ErrImagePull with the runtime\'s error, and no container', async () => {
    const pod = itemsOf(result.stdout).find((p) => p.metadata.name === 'no-image')!;
    expect(pod.status.phase).to.equal('Pending');
    expect(pod.status.containerStatuses[0]!.state.waiting?.reason).to.equal('ErrImagePull');
    expect(pod.status.containerStatuses[0]!.state.waiting?.message).to.match(/^Failed to pull image "mcr\.microsoft\.com\/windows\/nanoserver:nope": rpc error: code = \w+ desc = ./);
    expect(await containersOf(rt, 'no-image')).to.deep.equal([]);
  });

  it('get shows the reasons and describe the Failed events with the message', async () => {
    const get = await runKubelet(['get', '-A', '--container-runtime-endpoint', rt.endpoint]);
    const statuses = Object.fromEntries(get.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/ {3,}/)).map((cells) => [cells[1], cells[3]]));
    for (const c of cases) expect(statuses[c.pod]).to.be.oneOf(['RunContainerError', 'CreateContainerError', 'StartError']);
    const describe = await runKubelet(['describe', 'unknown-user', '--container-runtime-endpoint', rt.endpoint]);
    expect(describe.code).to.equal(0);
    expect(describe.stdout).to.match(/Warning +Failed +\S+ +kubelet +Error: .*The user name or password is incorrect\./);
    expect(describe.stdout).to.match(/State: +Waiting\n +Reason: +(RunContainerError|CreateContainerError)/);
  });
});

describe('cri-winsim kubelet run: bad input starts nothing', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;
  let dir: string;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime();
  });
  after(async () => {
    await rt?.stop();
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'winsim-kubelet-bad-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
    expect(await sandboxNames(rt), 'no sandbox may exist after bad input').to.deep.equal([]);
    expect((await crictlJson<{ containers: unknown[] }>(rt, ['ps', '-a', '-o', 'json'])).containers).to.deep.equal([]);
  });

  const run = (...files: string[]) => runKubelet(['run', ...files, '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint]);
  const pod = (name: string, extra = '') =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: ${name}\nspec:\n  containers:\n    - name: app\n      image: mcr.microsoft.com/windows/nanoserver:ltsc2022\n${extra}`;

  it('malformed YAML: file, document and position', async () => {
    const file = join(dir, 'broken.yaml');
    await writeFile(file, `${pod('fine')}---\napiVersion: v1\nkind: Pod\nmetadata: { name: [\n`);
    const r = await run(file);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(new RegExp(`^error: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: document 2: invalid YAML: .*\\(line \\d+, column \\d+\\)\\n`));
    await runKubelet(['delete', 'fine', '--grace-period', '0', '--container-runtime-endpoint', rt.endpoint]);
  });

  it('an unknown kind: file, document and the kind field', async () => {
    const file = join(dir, 'secret.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\n');
    const r = await run(file);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(
      `error: ${file}: document 1: kind: Unsupported value: "Secret": supported values: "Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"\n`,
    );
  });

  it('an invalid pod: kubectl\'s "The Pod is invalid" with file, document and every field', async () => {
    const file = join(dir, 'invalid.yaml');
    await writeFile(
      file,
      `# the second document is the broken one\n${pod('ok-but-not-alone')}---\n${pod('bad', '      securityContext:\n        windowsOptions:\n          runAsUserName: "a\\\\b\\\\c"\n    - image: x\n')}`,
    );
    const r = await run(file);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(
      `error: ${file}: document 2: The Pod "bad" is invalid: \n` +
        '* spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash\n' +
        '* spec.containers[1].name: Required value\n',
    );
    // The valid document of the same file is a pod of its own: it ran; remove it for the check.
    const del = await runKubelet(['delete', 'ok-but-not-alone', '--grace-period', '0', '--container-runtime-endpoint', rt.endpoint]);
    expect(del.stdout).to.equal('pod "ok-but-not-alone" deleted\n');
  });

  it('a broken cluster manifest: file, document and field, and no pod at all', async () => {
    const brokenCluster = join(dir, 'cluster');
    await mkdir(brokenCluster);
    await writeFile(join(brokenCluster, 'sa.yaml'), 'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: webapp\n  namespace: default\n---\napiVersion: v1\nkind: Namespace\nmetadata: {}\n');
    const r = await runKubelet(['run', pods('run-as-username-pod.yaml'), '--cluster', brokenCluster, '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(
      `error: ${join(brokenCluster, 'sa.yaml')}: document 2: metadata.name: Required value: name or generateName is required\n` +
        `error: cluster directory ${brokenCluster} is invalid; no pod was started\n`,
    );
  });

  it('an admission refusal prints the webhook denial as kubectl does', async () => {
    const r = await run(pods('gmsa-service-account-not-authorised.yaml'));
    expect(r.code).to.equal(1);
    expect(r.stdout).to.equal('');
    expect(r.stderr).to.equal(
      `Error from server: error when creating ${JSON.stringify(pods('gmsa-service-account-not-authorised.yaml'))}: admission webhook "admission-webhook.windows-gmsa.sigs.k8s.io" denied the request: service account "reporting" is not authorized to \`use\` GMSA cred spec "webapplication1"\n`,
    );
  });

  it('the KEP ConfigMap design refuses a requesting user without `use` (--as)', async () => {
    const r = await runKubelet(['run', pods('gmsa-configmap-design.yaml'), '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--as', 'mallory', '--as-group', 'contractors', '--gmsa-design', 'kep-configmap']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(
      `Error from server (Forbidden): error when creating ${JSON.stringify(pods('gmsa-configmap-design.yaml'))}: pods "webserver-kep" is forbidden: user "mallory" is not authorized to \`use\` GMSA ConfigMap "webserver-credspec" in namespace "contoso-apps"\n`,
    );
  });
});

describe('cri-winsim kubelet get, describe and delete', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime();
    const r = await runKubelet(['run', pods('run-as-username-pod.yaml'), pods('run-as-username-container.yaml'), '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--wait-ready']);
    expect(r.code, r.stderr).to.equal(0);
  });
  after(async () => {
    await rt?.stop();
  });

  it('get -o yaml: phase, conditions and container statuses', async () => {
    const r = await runKubelet(['get', 'pods', 'run-as-username-container-demo', '-o', 'json', '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code, r.stderr).to.equal(0);
    const pod = JSON.parse(r.stdout) as PodJson & { status: { conditions: { type: string; status: string }[] }; spec: { nodeName: string } };
    expect(pod.status.phase).to.equal('Running');
    expect(pod.status.conditions.map((c) => `${c.type}=${c.status}`)).to.deep.equal([
      'PodReadyToStartContainers=True', 'Initialized=True', 'Ready=True', 'ContainersReady=True', 'PodScheduled=True',
    ]);
    expect(pod.status.containerStatuses[0]).to.deep.include({ name: 'run-as-username-demo', ready: true, restartCount: 0 });
    const [container] = await containersOf(rt, 'run-as-username-container-demo');
    expect((await runtimeSpec(rt, container!.id)).process.user.username).to.equal('ContainerAdministrator');
  });

  it('describe lists containers and the kubelet events', async () => {
    const r = await runKubelet(['describe', 'pod', 'run-as-username-pod-demo', '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^Name: +run-as-username-pod-demo\nNamespace: +default\n/);
    expect(r.stdout).to.match(/Run As User: +ContainerUser/);
    expect(r.stdout).to.match(/Events:\n +Type +Reason +Age +From +Message\n/);
    expect(r.stdout).to.match(/Normal +Started +\S+ +kubelet +Started container run-as-username-demo/);
  });

  it('an unknown pod is NotFound and exits 1', async () => {
    const r = await runKubelet(['describe', 'nope', '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal('Error from server (NotFound): pods "nope" not found\n');
  });

  it('delete stops and removes every container and sandbox', async () => {
    const r = await runKubelet(['delete', '--all', '--grace-period', '1', '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('pod "run-as-username-container-demo" deleted\npod "run-as-username-pod-demo" deleted\n');
    expect(await sandboxNames(rt)).to.deep.equal([]);
    expect((await crictlJson<{ containers: unknown[] }>(rt, ['ps', '-a', '-o', 'json'])).containers).to.deep.equal([]);
    const get = await runKubelet(['get', '--container-runtime-endpoint', rt.endpoint]);
    expect(get.stderr).to.equal('No resources found in default namespace.\n');
  });
});

// Texts: pkg/kubelet/prober/prober.go (Unhealthy), pkg/probe/tcp/tcp.go, kubernetes v1.34.12.
describe('cri-winsim kubelet run --wait-ready: readiness probes decide when a pod is ready', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime();
  });
  after(async () => {
    await rt?.stop();
  });

  it('waits for the httpGet readiness probe; a pod whose probe keeps failing times out not ready', async () => {
    const ready = join(rt.dir, 'iis-ready.yaml');
    const never = join(rt.dir, 'never-ready.yaml');
    await writeFile(ready, [
      'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: iis-ready', 'spec:', '  containers:',
      '    - name: iis', '      image: mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
      '      readinessProbe:', '        httpGet: {path: /, port: 80}', '        initialDelaySeconds: 1', '        periodSeconds: 1', '',
    ].join('\n'));
    await writeFile(never, [
      'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: never-ready', 'spec:', '  containers:',
      '    - name: app', '      image: mcr.microsoft.com/windows/nanoserver:ltsc2022', '      command: ["ping", "-t", "localhost"]',
      '      readinessProbe:', '        tcpSocket: {port: 8080}', '        periodSeconds: 1', '        failureThreshold: 1', '',
    ].join('\n'));
    const r = await runKubelet(['run', ready, never, '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--wait-ready', '--timeout', '8s']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal('error: timed out after 8s waiting for pod default/never-ready to be ready (Running)\n');
    expect(r.stdout).to.match(/^iis-ready\s+1\/1\s+Running\s+0\s/m);
    expect(r.stdout).to.match(/^never-ready\s+0\/1\s+Running\s+0\s/m);

    // What the prober found stays in the records: `kubelet get` and `describe` show it.
    const get = await runKubelet(['get', 'pod', 'iis-ready', '-o', 'json', '--container-runtime-endpoint', rt.endpoint]);
    const pod = JSON.parse(get.stdout);
    expect(pod.status.containerStatuses[0]).to.deep.include({ ready: true, started: true });
    expect(pod.status.conditions.find((c: any) => c.type === 'Ready').status).to.equal('True');
    const described = await runKubelet(['describe', 'never-ready', '--container-runtime-endpoint', rt.endpoint]);
    expect(described.stdout).to.match(/Warning\s+Unhealthy\s+.*Readiness probe failed: dial tcp 127\.\d+\.\d+\.\d+:8080: connect: connection refused$/m);
    expect(described.stdout).to.match(/^\s+Ready\s+False\s*$/m);
  });
});

describe('cri-winsim kubelet --pod-manifest-path: the static pod sync loop', function () {
  this.timeout(120_000);
  let rt: RuntimeHandle;
  let manifests: string;

  before(async function () {
    requireCriTool(this, 'crictl');
    rt = await startRuntime();
    manifests = join(rt.dir, 'manifests');
    await mkdir(manifests);
  });
  after(async () => {
    await rt?.stop();
  });

  const podFile = (command: string) =>
    `apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n    - name: app\n      image: mcr.microsoft.com/windows/nanoserver:ltsc2022\n      command: ["cmd", "/c", "${command}"]\n`;

  it('creates, replaces and deletes pods as files are added, changed and removed, and stops on SIGTERM', async () => {
    // A resync far beyond the test: every change below must come from the directory watch.
    const loop = await startSyncLoop(['--pod-manifest-path', manifests, '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--log-level', 'info'], 'watching the pod manifest path');
    try {
      await writeFile(join(manifests, 'web.yaml'), podFile('ping -t localhost'));
      const first = await eventually('the pod of the new file', async () => (await containersOf(rt, 'web')).find((c) => c.state === 'CONTAINER_RUNNING'));
      const firstUid = first.labels['io.kubernetes.pod.uid'];

      await writeFile(join(manifests, 'web.yaml'), podFile('ping -n 1000 localhost'));
      await eventually('the pod of the changed file', async () => {
        const running = (await containersOf(rt, 'web')).filter((c) => c.state === 'CONTAINER_RUNNING');
        return running.length === 1 && running[0]!.labels['io.kubernetes.pod.uid'] !== firstUid ? running[0] : undefined;
      });
      expect(await sandboxNames(rt)).to.deep.equal(['web']);

      await writeFile(join(manifests, 'notes.txt'), 'not a manifest');
      await rm(join(manifests, 'web.yaml'));
      await eventually('no pod once the file is gone', async () => ((await sandboxNames(rt)).length === 0 ? true : undefined));
    } finally {
      expect(await loop.stop()).to.equal(0);
    }
    expect(loop.lines.some((l) => l.includes('stopping the sync loop'))).to.equal(true);
    expect(loop.stdout()).to.match(/NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE\ndefault +web +1\/1 +Running +0/);
  });

  // Texts: pkg/kubelet/prober/prober.go (Unhealthy), kuberuntime_manager.go computePodActions and
  // kuberuntime_container.go killContainer (Killing), kubernetes v1.34.12.
  it('probes: READY follows an httpGet readiness probe; a failing exec liveness probe restarts the container', async () => {
    const iis = [
      'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: iis-probed', 'spec:', '  containers:',
      '    - name: iis', '      image: mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022',
      '      readinessProbe:', '        httpGet: {path: /iisstart.htm, port: 80}', '        periodSeconds: 1',
      '    - name: waiter', '      image: mcr.microsoft.com/windows/nanoserver:ltsc2022', '      command: ["ping", "-t", "localhost"]',
      '      readinessProbe:', '        tcpSocket: {port: 8080}', '        periodSeconds: 1', '        failureThreshold: 1', '',
    ].join('\n');
    const unhealthy = [
      'apiVersion: v1', 'kind: Pod', 'metadata:', '  name: unhealthy', 'spec:', '  terminationGracePeriodSeconds: 2', '  containers:',
      '    - name: app', '      image: mcr.microsoft.com/windows/nanoserver:ltsc2022', '      command: ["ping", "-t", "localhost"]',
      '      livenessProbe:', '        exec: {command: ["cmd", "/c", "exit 1"]}', '        periodSeconds: 1', '        failureThreshold: 2', '',
    ].join('\n');
    const loop = await startSyncLoop(['--pod-manifest-path', manifests, '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint, '--log-level', 'info'], 'watching the pod manifest path');
    const get = async (name: string): Promise<any> => {
      const r = await runKubelet(['get', 'pod', name, '-o', 'json', '--container-runtime-endpoint', rt.endpoint]);
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    };
    try {
      await writeFile(join(manifests, 'iis-probed.yaml'), iis);
      await writeFile(join(manifests, 'unhealthy.yaml'), unhealthy);
      const ready = await eventually('iis ready', async () => {
        const pod = await get('iis-probed');
        return pod?.status.containerStatuses.find((c: any) => c.name === 'iis')?.ready === true ? pod : undefined;
      }, 60_000, 300);
      expect(Object.fromEntries(ready.status.containerStatuses.map((c: any) => [c.name, [c.ready, c.started]]))).to.deep.equal({ iis: [true, true], waiter: [false, true] });
      expect(ready.status.conditions.find((c: any) => c.type === 'Ready')).to.deep.include({ status: 'False', message: 'containers with unready status: [waiter]' });
      const table = await runKubelet(['get', 'pod', 'iis-probed', '--no-headers', '--container-runtime-endpoint', rt.endpoint]);
      expect(table.stdout).to.match(/^iis-probed\s+1\/2\s+Running\s+0\s/);

      const restarted = await eventually('unhealthy restarted', async () => {
        const pod = await get('unhealthy');
        return (pod?.status.containerStatuses[0]?.restartCount ?? 0) >= 1 ? pod : undefined;
      }, 60_000, 300);
      expect(restarted.status.containerStatuses[0].lastState.terminated).to.be.an('object');
      const described = await runKubelet(['describe', 'unhealthy', '--container-runtime-endpoint', rt.endpoint]);
      // Exec probes quote the command's output: empty for `exit 1`.
      expect(described.stdout).to.match(/Warning\s+Unhealthy\s+.*Liveness probe failed: *$/m);
      expect(described.stdout).to.match(/Normal\s+Killing\s+.*Container app failed liveness probe, will be restarted$/m);
      expect(described.stdout).to.match(/^ {4}Liveness: {7}exec \[cmd \/c exit 1\] delay=0s timeout=1s period=1s #success=1 #failure=2$/m);
      const waiter = await runKubelet(['describe', 'iis-probed', '--container-runtime-endpoint', rt.endpoint]);
      expect(waiter.stdout).to.match(/Warning\s+Unhealthy\s+.*Readiness probe failed: dial tcp 127\.\d+\.\d+\.\d+:8080: connect: connection refused$/m);
    } finally {
      await rm(join(manifests, 'iis-probed.yaml'), { force: true });
      await rm(join(manifests, 'unhealthy.yaml'), { force: true });
      await eventually('no probed pods left', async () => ((await sandboxNames(rt)).some((n) => n === 'iis-probed' || n === 'unhealthy') ? undefined : true), 30_000);
      expect(await loop.stop()).to.equal(0);
    }
  });

  it('refuses a directory that does not exist', async () => {
    const r = await runKubelet(['--pod-manifest-path', join(manifests, 'missing'), '--cluster', cluster, '--container-runtime-endpoint', rt.endpoint]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(`error: --pod-manifest-path ${join(manifests, 'missing')}: not a directory\n`);
  });
});
