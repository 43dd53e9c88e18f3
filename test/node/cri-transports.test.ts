// Node mode through both CRI transports against a real control plane: two node processes, one
// whose kubelet calls its runtime over the socket (`--cri-transport grpc`) and one in process (the
// default), get the same pods bound to them: one that runs with a gMSA credential spec and
// runAsUserName, one whose container exits 3, one whose gMSA the node may not use (identity
// failure, --ad-mode gmsa-kep), one whose image the node refuses at pull. The pod statuses and
// the kubelet's events, as the API server has them, must be the same once ids, addresses and
// times are replaced by placeholders.
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, requireControlPlaneTools, type ControlPlane } from '../support/control-plane.js';
import { liveNodeProcesses, startNodeProcess } from '../support/node-process.js';
import { until } from '../support/wait.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC, kepExampleWith } from '../runtime/windows/kep-example.js';

const SERVERCORE = 'mcr.microsoft.com/windows/servercore:ltsc2022';
const NODES = { grpc: 'tr-grpc', inprocess: 'tr-inproc' } as const;

/** A pod bound to `node` (no scheduler in the way), restartPolicy Never so every outcome settles. */
function pod(name: string, node: string, container: object, credentialSpec?: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-${node}`, namespace: 'default', labels: { suite: 'cri-transports' } },
    spec: {
      nodeName: node,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      securityContext: {
        windowsOptions: {
          runAsUserName: 'ContainerUser',
          ...(credentialSpec === undefined ? {} : { gmsaCredentialSpecName: 'webapplication1', gmsaCredentialSpec: credentialSpec }),
        },
      },
      containers: [{ name: 'app', ...container }],
    },
  };
}

const DENIED = kepExampleWith((doc) => {
  doc.DomainJoinConfig.MachineAccountName = 'SqlReporting';
  doc.ActiveDirectoryConfig.GroupManagedServiceAccounts = [{ Name: 'SqlReporting', Scope: 'DEMO' }, { Name: 'SqlReporting', Scope: 'contoso.com' }];
});

const PODS: [string, object, string?][] = [
  ['runs', { image: SERVERCORE, command: ['ping', '-t', 'localhost'] }, KEP_EXAMPLE_CREDENTIAL_SPEC],
  ['exits', { image: SERVERCORE, command: ['cmd', '/c', 'exit 3'] }],
  ['denied', { image: SERVERCORE, command: ['ping', '-t', 'localhost'] }, DENIED],
  ['badimage', { image: 'mcr.microsoft.com/windows/nanoserver:ltsc2019', command: ['ping', '-t', 'localhost'] }],
];

/**
 * A failed pull is ErrImagePull, then ImagePullBackOff while the back-off runs: which one a read
 * finds is timing. Both become one placeholder; the pull's error text is compared in the events.
 */
const PULL_FAILURES = ['ErrImagePull', 'ImagePullBackOff'];
const pullFailure = (state: any): unknown => (PULL_FAILURES.includes(state?.waiting?.reason) ? { waiting: { reason: '<pull failure>' } } : state);

/** The pod's status and the kubelet's events, with the node's and the run's own values replaced. */
function comparable(value: unknown, node: string): unknown {
  return JSON.parse(JSON.stringify(value)
    .replaceAll(node, '<node>')
    .replace(/\b[0-9a-f]{64}\b/g, '<id>')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '<uid>')
    .replace(/\b127\.\d+\.\d+\.\d+\b/g, '<ip>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/containerd:\/\/|cri-winsim:\/\//g, '<runtime>://'));
}

describe('node mode through the gRPC and the in-process CRI transport: the same pod statuses', function () {
  this.timeout(240_000);
  let cp: ControlPlane;
  let dir: string;

  before(async function () {
    this.timeout(240_000);
    requireControlPlaneTools(this);
    dir = await mkdtemp(join(tmpdir(), 'cwt-'));
    cp = await startControlPlane({ nodeNames: Object.values(NODES), scheduler: false });
    for (const [transport, node] of Object.entries(NODES)) {
      await startNodeProcess(['node', '--kubeconfig', await cp.nodeKubeconfig(node), '--hostname-override', node, '--state-dir', join(dir, node), '--port', '0',
        '--client-ca-file', cp.kubeletClientCaFile, '--ad-mode', 'gmsa-kep', '--cri-transport', transport]);
    }
    // The first pod pulls servercore; the others, started once it runs, find it present (a pull
    // racing another's would make the Pulled events differ by timing, not by transport).
    const [first, ...rest] = PODS;
    for (const node of Object.values(NODES)) await cp.apply(pod(first![0], node, first![1], first![2]));
    for (const node of Object.values(NODES)) await settled(first![0], node);
    for (const node of Object.values(NODES)) for (const [name, container, spec] of rest) await cp.apply(pod(name, node, container, spec));
  });

  after(async function () {
    this.timeout(90_000);
    for (const p of liveNodeProcesses()) await p.stop();
    await cp?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** The pod once its outcome has settled: Running and Ready, Failed, or waiting after a failed pull. */
  const settled = async (name: string, node: string): Promise<any> =>
    until(`${name}-${node} settled`, 120_000, async () => {
      const p = JSON.parse(await cp.kubectlOk(['get', 'pod', `${name}-${node}`, '-o', 'json']));
      const status = p.status?.containerStatuses?.[0];
      const done = p.status?.phase === 'Failed' || (p.status?.phase === 'Running' && status?.ready === true) || PULL_FAILURES.includes(status?.state?.waiting?.reason);
      return done ? p : undefined;
    });

  /**
   * The kubelet's events of a pod, once each: type, reason, message. The back-off ones are left
   * out (whether the first back-off began before the pod was read is timing), and so are the
   * durations of a pull.
   */
  const events = async (name: string, node: string): Promise<string[]> => {
    const list = JSON.parse(await cp.kubectlOk(['get', 'events', '--field-selector', `involvedObject.name=${name}-${node}`, '-o', 'json']));
    return [...new Set<string>(list.items
      .filter((e: any) => e.source?.component === 'kubelet' && !/BackOff|Back-off/.test(`${e.reason} ${e.message}`))
      .map((e: any) => `${e.type} ${e.reason} ${e.message}`.replace(/\b\d+(\.\d+)?(ms|s)\b/g, '<duration>')))].sort();
  };

  for (const [name] of PODS) {
    it(`${name}: the same phase, conditions, container status and kubelet events`, async () => {
      const seen = await Promise.all(Object.values(NODES).map(async (node) => {
        const p = await settled(name, node);
        const s = p.status;
        return comparable({
          phase: s.phase,
          reason: s.reason,
          message: s.message,
          conditions: (s.conditions ?? []).map((c: any) => [c.type, c.status, c.reason]).sort(),
          containers: (s.containerStatuses ?? []).map((c: any) => ({ name: c.name, ready: c.ready, started: c.started, restartCount: c.restartCount, state: pullFailure(c.state), lastState: c.lastState, image: c.image })),
          events: await events(name, node),
        }, node);
      }));
      expect(seen[1]).to.deep.equal(seen[0]);
      // The outcomes the comparison covers, so that two equally broken nodes cannot pass.
      const expected: Record<string, RegExp> = { runs: /"phase":"Running"/, exits: /"exitCode":3/, denied: /SqlReporting/, badimage: /rpc error: code = \w+ desc = / };
      expect(JSON.stringify(seen[0])).to.match(expected[name]!);
    });
  }
});
