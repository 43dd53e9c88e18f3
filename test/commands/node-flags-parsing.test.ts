// The node command's flag parsing (src/commands/node.ts) and the per-node identity it derives.
// Taint syntax follows the kubelet's --register-with-taints (k8s.io/kubernetes pkg/util/taints
// ParseTaints, v1.34): key=value:Effect or key:Effect, effects NoSchedule, PreferNoSchedule, NoExecute.
import { expect } from 'chai';
import { computerName, nodeAddress, podCidr, nodeNames, parseDuration } from '../../src/commands/node-names.js';
import { parseNodeLabels, parseTaints } from '../../src/commands/registration-flags.js';
import { windowsOsImage } from '../../src/kubelet/node/node-controller.js';
import { defaultNodeDirectory, deriveNodeDirectory } from '../../src/runtime/windows/node-directory.js';

describe('node command flags', () => {
  it('parses --register-with-taints as the kubelet does', () => {
    expect(parseTaints('os=windows:NoSchedule,dedicated:PreferNoSchedule')).to.deep.equal([
      { key: 'os', value: 'windows', effect: 'NoSchedule' },
      { key: 'dedicated', effect: 'PreferNoSchedule' },
    ]);
    expect(() => parseTaints('os=windows:Sometimes')).to.throw('--register-with-taints: invalid taint spec: os=windows:Sometimes, unsupported taint effect "Sometimes"');
    expect(parseTaints(undefined)).to.deep.equal([]);
  });

  it('parses --node-labels key=value pairs and names a malformed one', () => {
    expect(parseNodeLabels('team=identity,tier=test')).to.deep.equal({ team: 'identity', tier: 'test' });
    expect(() => parseNodeLabels('team')).to.throw('--node-labels: "team" is not key=value');
  });

  it('parses Go durations for --node-status-update-frequency', () => {
    expect(parseDuration('--x', '10s')).to.equal(10_000);
    expect(parseDuration('--x', '1m30s')).to.equal(90_000);
    expect(parseDuration('--x', '500ms')).to.equal(500);
    expect(() => parseDuration('--node-status-update-frequency', '10')).to.throw('--node-status-update-frequency: invalid duration "10"');
  });

  it('names nodes PREFIX-1 … PREFIX-N, lowercases --hostname-override and refuses bad names', () => {
    expect(nodeNames({ nodes: '3', nodeNamePrefix: 'Win' })).to.deep.equal(['win-1', 'win-2', 'win-3']);
    expect(nodeNames({ hostnameOverride: ' WinSim-1 ' })).to.deep.equal(['winsim-1']);
    expect(() => nodeNames({ nodes: '2' })).to.throw('--nodes needs --node-name-prefix');
    expect(() => nodeNames({ hostnameOverride: 'win_sim' })).to.throw('node name "win_sim": must be a lowercase RFC 1123 subdomain');
    expect(() => nodeNames({})).to.throw('give --hostname-override NAME');
  });

  it('gives each StatefulSet replica its slice of the names with --node-ordinal (a number or a pod name)', () => {
    expect(nodeNames({ nodes: '3', nodeNamePrefix: 'win', nodeOrdinal: '0' })).to.deep.equal(['win-1', 'win-2', 'win-3']);
    expect(nodeNames({ nodes: '3', nodeNamePrefix: 'win', nodeOrdinal: '2' })).to.deep.equal(['win-7', 'win-8', 'win-9']);
    expect(nodeNames({ nodes: '2', nodeNamePrefix: 'win', nodeOrdinal: 'cri-winsim-nodes-1' })).to.deep.equal(['win-3', 'win-4']);
    expect(() => nodeNames({ nodes: '2', nodeNamePrefix: 'win', nodeOrdinal: 'nodes-x' })).to.throw('--node-ordinal: "nodes-x" is not a whole number');
    expect(() => nodeNames({ hostnameOverride: 'win-1', nodeOrdinal: '1' })).to.throw('--node-ordinal needs --nodes');
  });

  it('gives every node a loopback address and refuses any other --node-ip', () => {
    expect(nodeAddress(0, 1)).to.equal('127.0.0.1');
    expect(nodeAddress(0, 3)).to.equal('127.0.1.1');
    expect(nodeAddress(253, 300)).to.equal('127.0.1.254');
    expect(nodeAddress(254, 300)).to.equal('127.0.2.1');
    expect(() => nodeAddress(0, 1, '10.0.0.5')).to.throw('--node-ip 10.0.0.5: node addresses are loopback only (127.0.0.0/8)');
  });

  it('gives every node a loopback pod CIDR of its own', () => {
    expect(podCidr(0, 1)).to.equal('127.10.0.0/16');
    expect(podCidr(0, 3)).to.equal('127.11.0.0/24');
    expect(podCidr(257, 300)).to.equal('127.12.1.0/24');
  });

  it('derives a computer name of at most 15 characters per node', () => {
    expect(computerName('winsim-12', 11)).to.equal('WINSIM-12');
    expect(computerName('cri-winsim-nodes-7d9f-abcde-10', 9)).to.equal('CRI-WINSIM-N-10');
  });

  it('maps the Windows build to the Server release as osImage', () => {
    expect(windowsOsImage('10.0.17763')).to.equal('Windows Server 2019 Datacenter');
    expect(windowsOsImage('10.0.20348')).to.equal('Windows Server 2022 Datacenter');
  });
});

describe('deriveNodeDirectory', () => {
  it("gives each node its own computer account with the template account's group memberships and gMSA rights", () => {
    const derived = deriveNodeDirectory(defaultNodeDirectory(), 'MULTI-2', 'multi-2');
    expect(derived.name).to.equal('MULTI-2');
    expect(derived.hostname).to.equal('multi-2');
    const domain = derived.file.domains[0]!;
    expect(domain.groups!.find((g) => g.name === 'WebAppHosts')!.members).to.deep.equal(['MULTI-2$']);
    expect(domain.gmsas!.find((g) => g.name === 'EventLogger')!.principalsAllowedToRetrieveManagedPassword).to.deep.equal(['MULTI-2$']);
    expect(domain.groups!.find((g) => g.name === 'SqlHosts')!.members).to.deep.equal(['SQLNODE1$']);
    // The template is not changed.
    expect(defaultNodeDirectory().file.domains[0]!.groups![0]!.members).to.deep.equal(['WINNODE1$']);
  });
});
