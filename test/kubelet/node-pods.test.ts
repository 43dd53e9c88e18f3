import { expect } from 'chai';
import { nodePodStatus, type NodeContainer, type NodePod } from '../../src/kubelet/node-pods.js';

const pod = (containers: Partial<NodeContainer>[], sandboxReady = true): NodePod => ({
  uid: 'u',
  name: 'web',
  namespace: 'apps',
  sandboxId: 's',
  sandboxIds: ['s'],
  sandboxReady,
  createdAt: '1',
  containers: containers.map((c, i) => ({ id: `c${i}`, name: `c${i}`, attempt: 0, state: 'Running', ...c })),
});

describe('pod status read back from the runtime (kubectl printPod)', () => {
  const cases: { name: string; pod: NodePod; expected: { ready: string; status: string } }[] = [
    { name: 'all running', pod: pod([{}, {}]), expected: { ready: '2/2', status: 'Running' } },
    { name: 'sandbox without containers yet', pod: pod([]), expected: { ready: '0/0', status: 'ContainerCreating' } },
    { name: 'a created container', pod: pod([{}, { state: 'Created' }]), expected: { ready: '1/2', status: 'ContainerCreating' } },
    { name: 'exited 0 alone: Completed', pod: pod([{ state: 'Exited', exitCode: 0 }]), expected: { ready: '0/1', status: 'Completed' } },
    { name: 'Completed beside a running one shows Running', pod: pod([{ state: 'Exited', exitCode: 0 }, {}]), expected: { ready: '1/2', status: 'Running' } },
    { name: 'exited non-zero: Error', pod: pod([{ state: 'Exited', exitCode: 9009 }]), expected: { ready: '0/1', status: 'Error' } },
    { name: 'the runtime reason wins', pod: pod([{ state: 'Exited', exitCode: 1, reason: 'ContainerCannotRun' }]), expected: { ready: '0/1', status: 'ContainerCannotRun' } },
    {
      name: 'the first container with a reason decides',
      pod: pod([{ state: 'Exited', exitCode: 1 }, { state: 'Exited', exitCode: 0 }]),
      expected: { ready: '0/2', status: 'Error' },
    },
    {
      name: 'only the newest attempt of a container counts',
      pod: pod([
        { name: 'app', attempt: 0, state: 'Exited', exitCode: 1 },
        { name: 'app', attempt: 1, state: 'Running' },
      ]),
      expected: { ready: '1/1', status: 'Running' },
    },
    { name: 'a stopped sandbox', pod: pod([{ state: 'Exited', exitCode: 0 }], false), expected: { ready: '0/1', status: 'Completed' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(nodePodStatus(c.pod)).to.deep.equal(c.expected);
    });
  }
});
