// Node mode's events for identity operations that failed inside containers
// (src/kubelet/node/identity-event-watcher.ts): a pass reads the runtime's identity journal
// through the Identity service and posts each new failure once through the node's event
// recorder. The reason IdentityOperationFailed is cri-winsim's own.
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DirectoryClusterSource } from '../../src/apiserver/cluster.js';
import { defaultRequestingUser } from '../../src/apiserver/admission.js';
import { unaryCall } from '../../src/cri/proto.js';
import { silentLogger } from '../../src/log.js';
import { EventRecorder } from '../../src/kubelet/node/event-recorder.js';
import { IdentityEventWatcher, type WatchedPod } from '../../src/kubelet/node/identity-event-watcher.js';
import type { ApiRequester } from '../../src/kubelet/node/api-client.js';
import { PodRecordStore } from '../../src/kubelet/pod-records.js';
import { runPods } from '../../src/kubelet/run-pods.js';
import { startInProcessRuntime } from '../e2e/windows-support.js';

const examples = fileURLToPath(new URL('../../../examples/', import.meta.url));

describe('node mode: identity operation failures become pod events', function () {
  this.timeout(60_000);

  it('posts a failed nltest once, as a Warning on the container, and nothing for a pod without a gMSA', async () => {
    const rt = await startInProcessRuntime({});
    const posted: { method: string; path: string; body: Record<string, unknown> }[] = [];
    const api: ApiRequester = {
      description: 'fake',
      request: <T>(method: string, path: string, body?: unknown) => {
        posted.push({ method, path, body: body as Record<string, unknown> });
        return Promise.resolve({ metadata: { name: `e${posted.length}` } } as T);
      },
      get: <T>() => Promise.resolve({} as T),
    };
    const recorder = new EventRecorder(api, 'winnode1', silentLogger());
    const never = { schedule: () => ({ cancel: () => undefined }) };
    try {
      const store = new PodRecordStore(join(rt.dir, 'kubelet'));
      await runPods(rt.cri, [join(examples, 'pods', 'gmsa-node-not-authorised.yaml'), join(examples, 'pods', 'run-as-username-pod.yaml')], {
        cluster: new DirectoryClusterSource(join(examples, 'cluster')),
        user: defaultRequestingUser,
        podLogsRoot: join(rt.dir, 'pod-logs'),
        records: store,
      });
      const watched: WatchedPod[] = (await store.list()).map((record) => ({ pod: record.pod, record }));
      const reporting = watched.find((w) => w.pod.metadata?.name === 'reporting-sql')!;
      const id = reporting.record.containers['reporter']!.containerId!;
      await unaryCall(rt.cri.runtime, 'ExecSync', { container_id: id, cmd: ['nltest', '/query'], timeout: '5' });
      await unaryCall(rt.cri.runtime, 'ExecSync', { container_id: id, cmd: ['nltest', '/parentdomain'], timeout: '5' });
      const watcher = new IdentityEventWatcher(rt.endpoint, never, recorder, () => watched, 5000, silentLogger());
      await watcher.pass();
      await watcher.pass();
      watcher.stop();
      await recorder.flushed();
      const events = posted.filter((p) => p.method === 'POST').map((p) => p.body);
      expect(events.map((e) => [e['type'], e['reason'], e['message'], (e['involvedObject'] as Record<string, unknown>)['name'], (e['involvedObject'] as Record<string, unknown>)['fieldPath']])).to.deep.equal([
        // The container's own command (the pod file's `nltest /sc_verify:contoso.com`), then the exec.
        ['Warning', 'IdentityOperationFailed', 'nltest /sc_verify:contoso.com: 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET', 'reporting-sql', 'spec.containers{reporter}'],
        ['Warning', 'IdentityOperationFailed', 'nltest /query: 1786 0x6fa ERROR_NO_TRUST_LSA_SECRET', 'reporting-sql', 'spec.containers{reporter}'],
      ]);
      // /parentdomain answered from the credential spec: seen, not posted.
      expect(reporting.record.identityEventsSeen).to.equal('3');
    } finally {
      await rt.close();
      await rm(rt.dir, { recursive: true, force: true });
    }
  });
});
