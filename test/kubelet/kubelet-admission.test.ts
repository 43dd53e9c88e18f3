// The kubelet's admission (pkg/kubelet/lifecycle/predicate.go, kubernetes v1.34): reasons and
// messages of the OS checks, of InsufficientResourceError ("Node didn't have enough resource: …")
// and of PredicateFailureError ("Predicate <name> failed: <reason>") with the scheduler plugins'
// texts (noderesources/fit.go, nodeaffinity, nodename, nodeports, tainttoleration).
import { expect } from 'chai';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { activePods, admitPodOnNode, nodeAllocatable, standaloneNode, type AdmissionNode } from '../../src/kubelet/kubelet-admission.js';
import { podRequests } from '../../src/kubelet/resource-requests.js';
import { scaledQuantity } from '../../src/apiserver/quantity.js';
import { matchesRequiredNodeAffinity, toleratesTaint } from '../../src/kubelet/node-affinity.js';

const node: AdmissionNode = {
  name: 'winnode1',
  labels: { 'kubernetes.io/os': 'windows', 'kubernetes.io/hostname': 'winnode1', 'node.kubernetes.io/windows-build': '10.0.20348', zone: 'a', gen: '3' },
  taints: [{ key: 'dedicated', value: 'gmsa', effect: 'NoExecute' }, { key: 'os', value: 'windows', effect: 'NoSchedule' }],
  allocatable: { cpu: '1', memory: '1Gi', pods: '3', 'ephemeral-storage': '10Gi', 'example.com/gpu': '2' },
};
const tolerateDedicated = [{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute' }];

const container = (resources?: V1Container['resources'], extra: Partial<V1Container> = {}): V1Container => ({ name: 'c', image: 'img', ...(resources === undefined ? {} : { resources }), ...extra });
const pod = (spec: Partial<V1PodSpec> = {}, labels?: Record<string, string>): V1Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1', ...(labels === undefined ? {} : { labels }) },
  spec: { containers: [container()], tolerations: tolerateDedicated, ...spec },
});

describe('kubelet admission (predicate.go v1.34)', () => {
  const cases: { name: string; pod: V1Pod; others?: V1Pod[]; staticPod?: boolean; reason?: string; message?: string }[] = [
    { name: 'admits a plain Windows pod', pod: pod() },
    {
      name: 'the kubernetes.io/os LABEL, not the node selector, is the OS selector check',
      pod: pod({}, { 'kubernetes.io/os': 'linux' }),
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    },
    { name: 'the OS label comes before the OS field', pod: pod({ os: { name: 'linux' } }, { 'kubernetes.io/os': 'linux' }), reason: 'PodOSSelectorNodeLabelDoesNotMatch' },
    { name: 'spec.os.name linux', pod: pod({ os: { name: 'linux' } }), reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" },
    {
      name: 'a kubernetes.io/os nodeSelector that does not match is the general filter\'s NodeAffinity',
      pod: pod({ nodeSelector: { 'kubernetes.io/os': 'linux' } }),
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    },
    {
      name: 'required node affinity with no matching term',
      pod: pod({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }] } } } }),
      reason: 'NodeAffinity',
    },
    {
      name: 'spec.nodeName of another node',
      pod: pod({ nodeName: 'winnode2' }),
      reason: 'NodeName',
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    },
    {
      name: 'a host port another pod holds (0.0.0.0 conflicts with any address)',
      pod: pod({ containers: [container(undefined, { ports: [{ containerPort: 80, hostPort: 8080, hostIP: '127.0.0.1' }] })] }),
      others: [pod({ containers: [container(undefined, { ports: [{ containerPort: 80, hostPort: 8080 }] })] })],
      reason: 'NodePorts',
      message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    },
    {
      name: 'the same host port over UDP does not conflict',
      pod: pod({ containers: [container(undefined, { ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }] })] }),
      others: [pod({ containers: [container(undefined, { ports: [{ containerPort: 53, hostPort: 53 }] })] })],
    },
    {
      name: 'cpu beyond allocatable, in millicores',
      pod: pod({ containers: [container({ requests: { cpu: '2' } })] }),
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000",
    },
    {
      name: 'cpu used by the other pods counts',
      pod: pod({ containers: [container({ requests: { cpu: '600m' } })] }),
      others: [pod({ containers: [container({ requests: { cpu: '0.5' } })] })],
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000",
    },
    {
      name: 'memory in bytes; a limit alone is the request',
      pod: pod({ containers: [container({ limits: { memory: '2Gi' } })] }),
      reason: 'OutOfmemory',
      message: `Node didn't have enough resource: memory, requested: ${2 * 2 ** 30}, used: 0, capacity: ${2 ** 30}`,
    },
    {
      name: 'ephemeral-storage',
      pod: pod({ containers: [container({ requests: { 'ephemeral-storage': '11Gi' } })] }),
      reason: 'OutOfephemeral-storage',
      message: `Node didn't have enough resource: ephemeral-storage, requested: ${11 * 2 ** 30}, used: 0, capacity: ${10 * 2 ** 30}`,
    },
    {
      name: 'an extended resource the node has: OutOf<name>',
      pod: pod({ containers: [container({ requests: { 'example.com/gpu': '3' }, limits: { 'example.com/gpu': '3' } })] }),
      reason: 'OutOfexample.com/gpu',
      message: "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2",
    },
    { name: 'an extended resource the node does not have is not checked (removeMissingExtendedResources)', pod: pod({ containers: [container({ requests: { 'example.com/fpga': '1' } })] }) },
    {
      name: 'pods: the node holds its max-pods already',
      pod: pod(),
      others: [pod(), pod(), pod()],
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    },
    {
      name: 'resources come first: pods before cpu, and before node affinity',
      pod: pod({ nodeName: 'other', containers: [container({ requests: { cpu: '5' } })] }),
      others: [pod(), pod(), pod()],
      reason: 'OutOfpods',
    },
    {
      name: 'a NoExecute taint not tolerated',
      pod: pod({ tolerations: [] }),
      reason: 'TaintToleration',
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    },
    { name: 'NoSchedule taints are the scheduler\'s, not the kubelet\'s', pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gmsa' }] }) },
    { name: 'a static pod\'s taints are not checked', pod: pod({ tolerations: [] }), staticPod: true },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const rejection = admitPodOnNode({ pod: c.pod, otherPods: c.others ?? [], ...(c.staticPod === undefined ? {} : { staticPod: c.staticPod }) }, node);
      if (c.reason === undefined) expect(rejection).to.equal(undefined);
      else {
        expect(rejection?.reason).to.equal(c.reason);
        if (c.message !== undefined) expect(rejection?.message).to.equal(c.message);
      }
    });
  }

  it('finished pods hold no resources (filterOutInactivePods)', () => {
    const done = { ...pod(), status: { phase: 'Succeeded' } };
    expect(activePods([done, pod(), { ...pod(), status: { phase: 'Failed' } }])).to.have.length(1);
  });

  it('allocatable takes Windows hard eviction thresholds off memory and storage', () => {
    expect(nodeAllocatable({ cpu: '4', memory: '16Gi', ephemeralStorage: '100Gi', maxPods: 110 })).to.deep.equal({
      cpu: '4',
      memory: String(16 * 2 ** 30 - 500 * 2 ** 20),
      pods: '110',
      'ephemeral-storage': String(Math.floor(100 * 2 ** 30 * 0.9)),
    });
    expect(standaloneNode('n1').labels['kubernetes.io/os']).to.equal('windows');
  });
});

describe('pod requests (component-helpers resource.PodRequests v1.34)', () => {
  it('quantities are exact and rounded up (MilliValue/Value)', () => {
    expect(scaledQuantity('0.1', 3)).to.equal(100);
    expect(scaledQuantity('100m', 3)).to.equal(100);
    expect(scaledQuantity('1.5', 3)).to.equal(1500);
    expect(scaledQuantity('1m', 0)).to.equal(1);
    expect(scaledQuantity('128Mi', 0)).to.equal(128 * 2 ** 20);
    expect(scaledQuantity('1e3', 0)).to.equal(1000);
    expect(scaledQuantity('2k', 0)).to.equal(2000);
    expect(scaledQuantity('abc', 0)).to.equal(undefined);
  });

  it('init containers are a floor; sidecars add to everything after them; overhead is added', () => {
    const p: V1Pod = {
      spec: {
        initContainers: [
          { name: 'setup', resources: { requests: { cpu: '3' } } },
          { name: 'proxy', restartPolicy: 'Always', resources: { requests: { cpu: '200m' } } },
          { name: 'late-init', resources: { requests: { cpu: '1' } } },
        ],
        containers: [{ name: 'a', resources: { requests: { cpu: '500m', memory: '1Gi' } } }, { name: 'b', resources: { requests: { cpu: '500m' } } }],
        overhead: { cpu: '100m', memory: '10Mi' },
      },
    };
    const r = podRequests(p);
    // max(1000 + 200 sidecar, 3000 setup, 1000 + 200 late-init) + 100 overhead
    expect(r.get('cpu')).to.equal(3100);
    expect(r.get('memory')).to.equal(2 ** 30 + 10 * 2 ** 20);
  });

  it('pod-level cpu and memory requests replace the containers\'', () => {
    const p = { spec: { resources: { requests: { cpu: '250m' } }, containers: [{ name: 'a', resources: { requests: { cpu: '2', memory: '1Mi' } } }] } } as V1Pod;
    expect(podRequests(p).get('cpu')).to.equal(250);
    expect(podRequests(p).get('memory')).to.equal(2 ** 20);
  });
});

describe('required node affinity and tolerations (component-helpers nodeaffinity, toleration.go)', () => {
  const n = { name: 'winnode1', labels: { zone: 'a', gen: '3' } };
  const term = (expr: object[], fields: object[] = []) => pod({ affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: expr, matchFields: fields }] as never } } } });
  const table: [string, V1Pod, boolean][] = [
    ['In', term([{ key: 'zone', operator: 'In', values: ['a', 'b'] }]), true],
    ['NotIn of a missing label', term([{ key: 'rack', operator: 'NotIn', values: ['x'] }]), true],
    ['Exists', term([{ key: 'zone', operator: 'Exists' }]), true],
    ['DoesNotExist', term([{ key: 'zone', operator: 'DoesNotExist' }]), false],
    ['Gt', term([{ key: 'gen', operator: 'Gt', values: ['2'] }]), true],
    ['Lt', term([{ key: 'gen', operator: 'Lt', values: ['3'] }]), false],
    ['matchFields metadata.name', term([], [{ key: 'metadata.name', operator: 'In', values: ['winnode1'] }]), true],
    ['an empty term matches nothing', term([]), false],
  ];
  for (const [name, p, expected] of table) it(name, () => expect(matchesRequiredNodeAffinity(p, n)).to.equal(expected));

  it('tolerations: empty key with Exists tolerates all; Equal compares values; effects must agree', () => {
    const taint = { key: 'k', value: 'v', effect: 'NoExecute' };
    expect(toleratesTaint({ operator: 'Exists' }, taint)).to.equal(true);
    expect(toleratesTaint({ key: 'k', value: 'v' }, taint)).to.equal(true);
    expect(toleratesTaint({ key: 'k', value: 'w' }, taint)).to.equal(false);
    expect(toleratesTaint({ key: 'k', operator: 'Exists', effect: 'NoSchedule' }, taint)).to.equal(false);
  });
});
