// The kubelet server's /explain/{ns}/{pod} (cri-winsim's own route): the node's records of a pod
// and the runtime's through its Identity service, as JSON, for `kubectl get --raw
// /api/v1/nodes/NODE/proxy/explain/NS/POD`. The 404 texts are our own.
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirectoryClusterSource } from '../../../src/apiserver/cluster.js';
import { defaultRequestingUser } from '../../../src/apiserver/admission.js';
import { PodRecordStore, type PodRecord } from '../../../src/kubelet/pod-records.js';
import { runPods } from '../../../src/kubelet/run-pods.js';
import { startKubeletServer, type KubeletServer } from '../../../src/kubelet/server/index.js';
import { startInProcessRuntime, type InProcessRuntime } from '../../e2e/windows-support.js';
import { kubeletRequest } from './https.js';

const examples = fileURLToPath(new URL('../../../../examples/', import.meta.url));

describe('kubelet server: /explain/{namespace}/{pod}', function () {
  this.timeout(60_000);
  let rt: InProcessRuntime | undefined;
  let server: KubeletServer | undefined;
  let records: PodRecord[] = [];

  before(async () => {
    rt = await startInProcessRuntime({});
    const store = new PodRecordStore(join(rt.dir, 'kubelet'));
    await runPods(rt.cri, [join(examples, 'pods', 'gmsa-pod-level.yaml'), join(examples, 'pods', 'gmsa-node-not-authorised.yaml')], {
      cluster: new DirectoryClusterSource(join(examples, 'cluster')),
      user: defaultRequestingUser,
      podLogsRoot: join(rt.dir, 'pod-logs'),
      records: store,
    });
    records = await store.list();
    server = await startKubeletServer({
      port: 0,
      nodeName: 'winnode1',
      cri: rt.cri,
      pods: () => records.map((r) => r.pod),
      podRecord: (namespace, name) => records.find((r) => r.pod.metadata?.namespace === namespace && r.pod.metadata?.name === name),
      anonymousAuth: true,
      authorizationMode: 'AlwaysAllow',
    });
  });
  after(async () => {
    await server?.close();
    await rt?.close();
    if (rt !== undefined) await rm(rt.dir, { recursive: true, force: true });
  });

  it('answers the explanation of a pod of the node as JSON', async () => {
    const ok = await kubeletRequest(server!.port, '/explain/contoso-apps/webapp-gmsa');
    expect(ok.status).to.equal(200);
    const explanation = JSON.parse(ok.body);
    expect([explanation.kind, explanation.pod.name, explanation.broken]).to.deep.equal(['IdentityExplanation', 'webapp-gmsa', undefined]);
    expect(explanation.containers.map((c: { name: string }) => c.name)).to.deep.equal(['iis', 'logger']);
    const denied = JSON.parse((await kubeletRequest(server!.port, '/explain/contoso-apps/reporting-sql')).body);
    expect(denied.broken).to.include({ hop: 'domain', container: 'reporter', docs: 'docs/failure-modes.md#node-not-allowed' });
  });

  it('a pod the node does not run is 404; a path of another shape is the mux\'s 404; only GET', async () => {
    expect(await kubeletRequest(server!.port, '/explain/contoso-apps/nosuch')).to.include({ status: 404, body: 'pod contoso-apps/nosuch not found on node winnode1\n' });
    expect(await kubeletRequest(server!.port, '/explain/contoso-apps')).to.include({ status: 404, body: '404 page not found\n' });
    expect((await kubeletRequest(server!.port, '/explain/contoso-apps/webapp-gmsa', { method: 'POST' })).status).to.equal(405);
  });
});
