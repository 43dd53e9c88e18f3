// The kubelet's garbage-collection flags: defaults (KubeletConfiguration v1beta1 defaults,
// kubernetes v1.34) and the configuration validation texts of
// pkg/kubelet/apis/config/validation/validation.go.
import { expect } from 'chai';
import { Command } from 'commander';
import { addGcFlags, gcOptions, standaloneNodeOf, type GcFlagValues } from '../../src/commands/gc-flags.js';
import { nodeModeOptions } from '../../src/commands/node.js';

function parse(args: string[]): GcFlagValues {
  const command = new Command('kubelet').exitOverride();
  addGcFlags((flags, description, defaultValue) => void command.option(flags, description, defaultValue));
  command.parse(args, { from: 'user' });
  return command.opts<GcFlagValues>();
}

describe('garbage-collection flags', () => {
  it("has the kubelet's defaults", () => {
    expect(gcOptions(parse([]), '100Gi')).to.deep.equal({
      containerPolicy: { maxPerPodContainer: 1, maxContainers: -1, minAgeMs: 0 },
      imagePolicy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 },
      imageFsCapacityBytes: 100 * 2 ** 30,
    });
  });

  it('takes each flag', () => {
    const o = gcOptions(parse(['--maximum-dead-containers-per-container', '2', '--maximum-dead-containers', '10', '--minimum-container-ttl-duration', '1m', '--image-gc-high-threshold', '90', '--image-gc-low-threshold', '50', '--minimum-image-ttl-duration', '30s']), '1Gi');
    expect(o.containerPolicy).to.deep.equal({ maxPerPodContainer: 2, maxContainers: 10, minAgeMs: 60_000 });
    expect(o.imagePolicy).to.deep.equal({ highThresholdPercent: 90, lowThresholdPercent: 50, minAgeMs: 30_000 });
  });

  const invalid: [string[], string][] = [
    [['--image-gc-high-threshold', '101'], 'invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive'],
    [['--image-gc-low-threshold', '-1'], 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) -1 must be between 0 and 100, inclusive'],
    [['--image-gc-low-threshold', '85'], 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 85 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85'],
  ];
  for (const [args, text] of invalid) it(`refuses ${args.join(' ')}`, () => expect(() => gcOptions(parse(args), '100Gi')).to.throw(text));
});

describe('the node of kubelet run and static pods', () => {
  it('takes the capacity, --node-labels and --register-with-taints flags node mode has', () => {
    const command = nodeModeOptions(new Command('kubelet').exitOverride());
    command.parse(['--cpu', '2', '--max-pods', '5', '--node-labels', 'node.kubernetes.io/windows-build=10.0.20348', '--register-with-taints', 'gmsa=only:NoExecute'], { from: 'user' });
    const node = standaloneNodeOf(command, 'winnode1');
    expect(node.allocatable['cpu']).to.equal('2');
    expect(node.allocatable['pods']).to.equal('5');
    expect(node.labels).to.include({ 'kubernetes.io/os': 'windows', 'node.kubernetes.io/windows-build': '10.0.20348' });
    expect(node.taints).to.deep.equal([{ key: 'gmsa', value: 'only', effect: 'NoExecute' }]);
  });
});
