import { expect } from 'chai';
import { ContainerState } from '../../src/runtime/store/container-store.js';
import { SandboxState } from '../../src/runtime/store/sandbox-store.js';
import { BUSYBOX, createContainer, OWN_PID_NAMESPACE, openRuntime, pull, rejection, runSandbox, securityContext, type RuntimeFixture } from './helpers.js';

describe('runtime: sandbox and container lifecycle', () => {
  let fx: RuntimeFixture;
  beforeEach(async () => {
    fx = await openRuntime();
    await pull(fx.runtime, BUSYBOX);
  });
  afterEach(async () => fx.close());

  it('reports version, both runtime conditions and the runtime config', async () => {
    const v = await fx.runtime.version({ version: '0.1.0' });
    expect(v.version).to.not.equal('');
    expect(v.runtime_name).to.equal('cri-winsim');
    expect(v.runtime_api_version).to.equal('v1');
    const s = await fx.runtime.status({ verbose: false });
    const ready = (s.status?.conditions ?? []).filter((c) => c.status === true).map((c) => c.type);
    expect(ready).to.have.members(['RuntimeReady', 'NetworkReady']);
    expect(s.info).to.equal(undefined);
    const verbose = await fx.runtime.status({ verbose: true });
    expect(JSON.parse(verbose.info?.['config'] ?? '{}')).to.have.property('podCidr', '10.88.0.0/16');
    await fx.runtime.updateRuntimeConfig({ runtime_config: { network_config: { pod_cidr: '10.244.1.0/24' } } });
    const sb = await runSandbox(fx.runtime);
    const st = await fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id, verbose: false });
    expect(st.status?.network?.ip).to.match(/^10\.244\.1\.\d+$/);
    const err = await rejection(fx.runtime.updateRuntimeConfig({ runtime_config: { network_config: { pod_cidr: 'nonsense' } } }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.contain('pod_cidr');
  });

  it('runs a sandbox READY, stops it NOTREADY, and removes it; stop and remove are idempotent', async () => {
    const sb = await runSandbox(fx.runtime, { labels: { app: 'web' }, annotations: { note: 'x' } });
    let status = await fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id, verbose: false });
    expect(status.status?.state).to.equal(SandboxState.READY);
    expect(status.status?.labels).to.deep.equal({ app: 'web' });
    expect(status.status?.annotations).to.deep.equal({ note: 'x' });
    expect(BigInt(String(status.status?.created_at)) > 1_600_000_000_000_000_000n).to.equal(true);
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sb.id });
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sb.id });
    status = await fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id, verbose: false });
    expect(status.status?.state).to.equal(SandboxState.NOTREADY);
    await fx.runtime.removePodSandbox({ pod_sandbox_id: sb.id });
    await fx.runtime.removePodSandbox({ pod_sandbox_id: sb.id });
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: 'f'.repeat(64) });
    const err = await rejection(fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id, verbose: false }));
    expect(err.code).to.equal('NotFound');
    expect(err.message).to.contain(sb.id);
    expect((await fx.runtime.listPodSandbox({ filter: null })).items).to.deep.equal([]);
  });

  it('refuses a sandbox without metadata fields, naming the field, and a duplicate name', async () => {
    const err = await rejection(fx.runtime.runPodSandbox({ config: { ...(await import('./helpers.js')).sandboxConfig(), metadata: { name: 'a', namespace: '', uid: 'u', attempt: 0 } }, runtime_handler: '' }));
    expect(err.code).to.equal('InvalidArgument');
    expect(err.message).to.contain('config.metadata.namespace');
    const sb = await runSandbox(fx.runtime);
    const dup = await rejection(fx.runtime.runPodSandbox({ config: sb.config, runtime_handler: '' }));
    expect(dup.code).to.equal('AlreadyExists');
    expect((await fx.runtime.listPodSandbox({ filter: null })).items).to.have.length(1);
  });

  it('takes a container through CREATED, RUNNING and EXITED with real timestamps and exit code', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'], labels: { tier: 'a' }, annotations: { k: 'v' } });
    let st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.CREATED);
    expect(st?.labels).to.deep.equal({ tier: 'a' });
    expect(st?.annotations).to.deep.equal({ k: 'v' });
    expect(st?.image_ref).to.not.equal('');
    expect(st?.log_path).to.match(/^\//);
    await fx.runtime.startContainer({ container_id: id });
    st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.RUNNING);
    const started = BigInt(String(st?.started_at));
    expect(started > BigInt(String(st?.created_at))).to.equal(true);
    const again = await rejection(fx.runtime.startContainer({ container_id: id }));
    expect(again.code).to.equal('FailedPrecondition');
    await fx.runtime.stopContainer({ container_id: id, timeout: '10' });
    st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.EXITED);
    expect(st?.exit_code).to.equal(143);
    expect(BigInt(String(st?.finished_at)) > started).to.equal(true);
    await fx.runtime.stopContainer({ container_id: id, timeout: '10' });
    await fx.runtime.removeContainer({ container_id: id });
    await fx.runtime.removeContainer({ container_id: id });
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    const gone = await rejection(fx.runtime.containerStatus({ container_id: id, verbose: false }));
    expect(gone.code).to.equal('NotFound');
    expect(gone.message).to.contain(id);
  });

  it('records the exit code of a command that exits by itself, with reason', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['sh', '-c', 'echo bye; exit 3'] });
    await fx.runtime.startContainer({ container_id: id });
    await fx.runtime.context.containers.get(id)?.live.exitHandled();
    const st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.EXITED);
    expect(st?.exit_code).to.equal(3);
    expect(st?.reason).to.equal('Error');
  });

  it('kills a process that ignores the stop signal once the timeout passes', async () => {
    const sb = await runSandbox(fx.runtime);
    // In its own PID namespace a shell is PID 1 and ignores SIGTERM (no default signal actions
    // for init), like `sleep` alone.
    const id = await createContainer(fx.runtime, sb, {
      command: ['sh', '-c', 'while true; do sleep 1; done'],
      linux: { resources: null, security_context: securityContext({ namespace_options: OWN_PID_NAMESPACE }) },
    });
    await fx.runtime.startContainer({ container_id: id });
    const before = Date.now();
    await fx.runtime.stopContainer({ container_id: id, timeout: '1' });
    const took = Date.now() - before;
    expect(took).to.be.within(900, 3000);
    const st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.exit_code).to.equal(137);
  });

  it('shares the pod PID namespace by default (pause is PID 1) and keeps its own with pid CONTAINER', async () => {
    await pull(fx.runtime, 'registry.k8s.io/e2e-test-images/nginx:1.14-2');
    const sb = await runSandbox(fx.runtime);
    const shared = await createContainer(fx.runtime, sb, {}, 'registry.k8s.io/e2e-test-images/nginx:1.14-2');
    const own = await createContainer(fx.runtime, sb, { linux: { resources: null, security_context: securityContext({ namespace_options: OWN_PID_NAMESPACE }) } }, 'registry.k8s.io/e2e-test-images/nginx:1.14-2');
    await fx.runtime.startContainer({ container_id: shared });
    await fx.runtime.startContainer({ container_id: own });
    const cmdline = async (id: string) => String((await fx.runtime.execSync({ container_id: id, cmd: ['cat', '/proc/1/cmdline'], timeout: '5' })).stdout);
    expect(await cmdline(shared)).to.equal('/pause\0');
    expect(await cmdline(own)).to.equal('nginx: master process nginx -g daemon off;');
    const seen = String((await fx.runtime.execSync({ container_id: shared, cmd: ['pgrep', 'nginx'], timeout: '5' })).stdout).trim().split('\n');
    expect(seen).to.have.length(1);
    await fx.runtime.stopContainer({ container_id: shared, timeout: '5' });
    expect((await fx.runtime.containerStatus({ container_id: own, verbose: false })).status?.state).to.equal(ContainerState.RUNNING);
  });

  it('fails a start whose program does not exist and marks the container EXITED with StartError', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['no-such-binary'] });
    const err = await rejection(fx.runtime.startContainer({ container_id: id }));
    expect(err.message).to.contain('"no-such-binary": executable file not found in $PATH');
    const st = (await fx.runtime.containerStatus({ container_id: id, verbose: false })).status;
    expect(st?.state).to.equal(ContainerState.EXITED);
    expect(st?.reason).to.equal('StartError');
    expect(st?.exit_code).to.equal(128);
  });

  it('refuses containers in unknown or stopped sandboxes and with unknown images', async () => {
    const sb = await runSandbox(fx.runtime);
    const missingImage = await rejection(createContainer(fx.runtime, sb, { command: ['top'] }, 'docker.io/library/unknown:1'));
    expect(missingImage.code).to.equal('NotFound');
    expect(missingImage.message).to.contain('docker.io/library/unknown:1');
    const noSandbox = await rejection(createContainer(fx.runtime, { id: 'abcdef', config: sb.config }, { command: ['top'] }));
    expect(noSandbox.code).to.equal('NotFound');
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sb.id });
    const stopped = await rejection(createContainer(fx.runtime, sb, { command: ['top'] }));
    expect(stopped.code).to.equal('FailedPrecondition');
    expect((await fx.runtime.listContainers({ filter: null })).containers).to.deep.equal([]);
  });

  it('stops every container of a sandbox when the sandbox stops, and removes them with it', async () => {
    const sb = await runSandbox(fx.runtime);
    const a = await createContainer(fx.runtime, sb, { command: ['sleep', '1000'] });
    const b = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: a });
    await fx.runtime.startContainer({ container_id: b });
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sb.id });
    const states = (await fx.runtime.listContainers({ filter: null })).containers?.map((c) => c.state);
    expect(states).to.deep.equal([ContainerState.EXITED, ContainerState.EXITED]);
    await fx.runtime.removePodSandbox({ pod_sandbox_id: sb.id });
    expect((await fx.runtime.listContainers({ filter: null })).containers).to.deep.equal([]);
  });

  it('publishes container events for create, start, stop and delete', async () => {
    const events: [string, number][] = [];
    const unsubscribe = fx.runtime.subscribeContainerEvents((ev) => events.push([ev.container_id ?? '', Number(ev.container_event_type)]));
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: id });
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    await fx.runtime.removeContainer({ container_id: id });
    unsubscribe();
    await fx.runtime.stopPodSandbox({ pod_sandbox_id: sb.id });
    expect(events.filter(([cid]) => cid === id).map(([, t]) => t)).to.deep.equal([0, 1, 2, 3]);
    expect(events.filter(([cid]) => cid === sb.id).map(([, t]) => t)).to.deep.equal([0, 1]);
  });

  it('derives the config and OCI spec again, key for key, once a container left the cache of recent ones', async () => {
    const sb = await runSandbox(fx.runtime);
    const overrides = {
      command: ['sh', '-c'],
      args: ['echo hi; sleep 30'],
      envs: [{ key: 'A', value: '1' }],
      working_dir: '/tmp',
      labels: { app: 'web' },
      annotations: { note: 'x' },
      linux: {
        resources: null,
        security_context: securityContext({ readonly_rootfs: true, namespace_options: OWN_PID_NAMESPACE }),
      },
    };
    const id = await createContainer(fx.runtime, sb, overrides);
    const record = fx.runtime.context.containers.get(id);
    if (record === undefined) throw new Error('no record');
    const { containers } = fx.runtime.context;
    const config = JSON.stringify(containers.configOf(record));
    const spec = JSON.stringify(containers.specOf(record));
    expect(JSON.parse(config)).to.deep.include({ args: ['echo hi; sleep 30'], working_dir: '/tmp', labels: { app: 'web' } });
    expect(JSON.parse(spec).process.args).to.deep.equal(['sh', '-c', 'echo hi; sleep 30']);
    // What a container no longer among the latest gets: its config decoded, its spec composed again.
    containers.forgetDerived(record);
    expect(JSON.stringify(containers.configOf(record))).to.equal(config);
    expect(JSON.stringify(containers.specOf(record))).to.equal(spec);
  });

  it('updates container resources into the status and spec, and refuses exited containers', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: id });
    const linux = {
      cpu_period: '100000', cpu_quota: '50000', cpu_shares: '512', memory_limit_in_bytes: '67108864', oom_score_adj: '0',
      cpuset_cpus: '', cpuset_mems: '', hugepage_limits: [], unified: {}, memory_swap_limit_in_bytes: '0',
    };
    await fx.runtime.updateContainerResources({ container_id: id, linux, windows: null, annotations: {} });
    const res = await fx.runtime.containerStatus({ container_id: id, verbose: true });
    expect(res.status?.resources?.linux?.memory_limit_in_bytes).to.equal('67108864');
    expect(JSON.parse(res.info?.['info'] ?? '{}').runtimeSpec.linux.resources.cpu_quota).to.equal('50000');
    const stats = (await fx.runtime.containerStats({ container_id: id })).stats;
    expect(Number(stats?.memory?.available_bytes?.value)).to.be.within(1, 67108864);
    await fx.runtime.stopContainer({ container_id: id, timeout: '0' });
    const err = await rejection(fx.runtime.updateContainerResources({ container_id: id, linux, windows: null, annotations: {} }));
    expect(err.code).to.equal('FailedPrecondition');
    const missing = await rejection(fx.runtime.updatePodSandboxResources({ pod_sandbox_id: 'feedface', overhead: null, resources: null }));
    expect(missing.code).to.equal('NotFound');
    await fx.runtime.updatePodSandboxResources({ pod_sandbox_id: sb.id, overhead: null, resources: linux });
  });

  it('lists metric descriptors and per-container metrics of ready sandboxes', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'] });
    await fx.runtime.startContainer({ container_id: id });
    const names = (await fx.runtime.listMetricDescriptors({})).descriptors?.map((d) => d.name);
    expect(names).to.include('container_memory_working_set_bytes');
    const metrics = (await fx.runtime.listPodSandboxMetrics({})).pod_metrics ?? [];
    expect(metrics.map((m) => m.pod_sandbox_id)).to.deep.equal([sb.id]);
    const ws = metrics[0]?.container_metrics?.[0]?.metrics?.find((m) => m.name === 'container_memory_working_set_bytes');
    expect(Number(ws?.value?.value)).to.be.greaterThan(0);
  });

  it('returns containerd-style verbose info with the pid and the OCI spec', async () => {
    const sb = await runSandbox(fx.runtime);
    const id = await createContainer(fx.runtime, sb, { command: ['top'], envs: [{ key: 'A', value: '1' }] });
    await fx.runtime.startContainer({ container_id: id });
    const res = await fx.runtime.containerStatus({ container_id: id, verbose: true });
    const info = JSON.parse(res.info?.['info'] ?? '{}');
    expect(info.pid).to.be.greaterThan(0);
    expect(info.sandboxID).to.equal(sb.id);
    expect(info.runtimeSpec.process.args).to.deep.equal(['top']);
    expect(info.runtimeSpec.process.env).to.include('A=1');
    const sres = await fx.runtime.podSandboxStatus({ pod_sandbox_id: sb.id, verbose: true });
    expect(JSON.parse(sres.info?.['info'] ?? '{}').runtimeSpec.hostname).to.equal(sb.config.metadata?.name);
  });
});
