// --random-hostname: the windows-gmsa webhook's RANDOM_HOSTNAME (kubernetes-sigs/windows-gmsa
// 993de21 admission-webhook/main.go env_bool: strconv.ParseBool, default false; the webhook
// panics with `unable to parse environment variable %s with value %s to bool`).
import { expect } from 'chai';
import { Command } from 'commander';
import { addClusterFlags, randomHostname } from '../../src/commands/kubelet-flags.js';

const parsed = (args: string[]): Command => addClusterFlags(new Command('run').argument('[files...]')).exitOverride().parse(args, { from: 'user' });

describe('--random-hostname (RANDOM_HOSTNAME)', () => {
  it('is off unless given, as in the webhook chart', () => {
    expect(randomHostname(parsed(['pod.yaml']), {})).to.equal(false);
  });

  it('is a plain flag: the pod file after it stays a file', () => {
    const command = parsed(['--random-hostname', 'pod.yaml']);
    expect(randomHostname(command, {})).to.equal(true);
    expect(command.args).to.deep.equal(['pod.yaml']);
  });

  it('reads RANDOM_HOSTNAME with the words of Go ParseBool, and names a value that is not one', () => {
    for (const word of ['1', 't', 'T', 'TRUE', 'true', 'True']) expect(randomHostname(parsed([]), { RANDOM_HOSTNAME: word })).to.equal(true);
    for (const word of ['0', 'f', 'F', 'FALSE', 'false', 'False']) expect(randomHostname(parsed([]), { RANDOM_HOSTNAME: word })).to.equal(false);
    expect(() => randomHostname(parsed([]), { RANDOM_HOSTNAME: 'maybe' })).to.throw('unable to parse environment variable RANDOM_HOSTNAME with value maybe to bool');
  });
});
