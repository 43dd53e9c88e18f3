import { expect } from 'chai';
import { CommandRegistry, type CommandContext } from '../../../src/emulator/command-registry.js';
import { evaluateContainerIdentity } from '../../../src/runtime/windows/container-identity.js';
import { parseCredentialSpec } from '../../../src/runtime/windows/credential-spec.js';
import {
  identityEnvironment,
  registerIdentityCommands,
  WINDOWS_IDENTITY_KEY,
} from '../../../src/runtime/windows/identity-command-registration.js';
import { defaultNodeDirectory } from '../../../src/runtime/windows/node-directory.js';
import { KEP_EXAMPLE_CREDENTIAL_SPEC } from './kep-example.js';
import { ContainerFiles } from '../../../src/emulator/container-files.js';

/** Just enough of a CommandContext for synchronous identity commands. */
function context(argv: string[], os: 'linux' | 'windows', platform: Record<string, unknown>) {
  const out = { stdout: '', stderr: '' };
  const ctx = {
    argv,
    env: new Map<string, string>(),
    stdin: '',
    pid: 1,
    signal: new AbortController().signal,
    target: { containerId: 'c1', sandboxId: 's1', os, hostname: 'pod-a', user: 'root', platform, files: ContainerFiles.of() },
    stdout: (t: string) => (out.stdout += t),
    stderr: (t: string) => (out.stderr += t),
  } as unknown as CommandContext;
  return { ctx, out };
}

describe('identity commands in the command registry', () => {
  const identity = evaluateContainerIdentity(
    defaultNodeDirectory(),
    parseCredentialSpec(KEP_EXAMPLE_CREDENTIAL_SPEC),
    undefined,
    'ContainerUser',
    'pod-a',
    'strict',
  ).identity;

  it('answers from the Windows identity, with CRLF line ends', async () => {
    const registry = new CommandRegistry();
    registerIdentityCommands(registry);
    const { ctx, out } = context(['nltest.exe', '/parentdomain'], 'windows', { [WINDOWS_IDENTITY_KEY]: identity });
    expect(await registry.lookup('NLTEST')!.handler(ctx)).to.equal(0);
    expect(out.stdout).to.equal('contoso.com. (1)\r\nThe command completed successfully\r\n');
  });

  it('falls back to the command registered before for Linux containers', async () => {
    const registry = new CommandRegistry();
    registry.register('whoami', (c) => {
      c.stdout('root\n');
      return 0;
    });
    registerIdentityCommands(registry);
    const { ctx, out } = context(['whoami'], 'linux', {});
    expect(await registry.lookup('whoami')!.handler(ctx)).to.equal(0);
    expect(out.stdout).to.equal('root\n');
  });

  it('exposes the identity environment for %USERNAME% expansion', () => {
    const env = identityEnvironment(identity);
    expect(env.get('USERNAME')).to.equal('ContainerUser');
    expect(env.get('COMPUTERNAME')).to.equal('POD-A');
  });
});
