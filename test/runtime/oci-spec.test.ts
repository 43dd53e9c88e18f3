import { expect } from 'chai';
import { resolveProcessArgs } from '../../src/runtime/container-create.js';
import {
  baseSpec,
  composeSpec,
  specEnv,
  withAnnotations,
  withCwd,
  withEnv,
  withHostname,
  withImageUser,
  withLinuxUser,
  withMounts,
  withProcessArgs,
} from '../../src/runtime/oci/spec.js';
import { withWindowsUsername } from '../../src/runtime/windows/oci-windows.js';

describe('OCI spec options', () => {
  it('withProcessArgs sets the args', () => {
    expect(composeSpec('linux', withProcessArgs(['top', '-b'])).process.args).to.deep.equal(['top', '-b']);
  });

  it('withEnv lets later values of a key replace earlier ones, keeping first-appearance order', () => {
    const spec = composeSpec('linux', withEnv(['PATH=/bin', 'A=1']), withEnv(['A=2', 'B=3']));
    expect(spec.process.env).to.deep.equal(['PATH=/bin', 'A=2', 'B=3']);
    expect([...specEnv(spec)]).to.deep.equal([['PATH', '/bin'], ['A', '2'], ['B', '3']]);
  });

  it('withCwd ignores an empty directory', () => {
    expect(composeSpec('linux', withCwd('/srv'), withCwd('')).process.cwd).to.equal('/srv');
    expect(baseSpec('windows').process.cwd).to.equal('C:\\');
  });

  it('withImageUser reads uid, uid:gid and names on Linux and sets username on Windows', () => {
    expect(composeSpec('linux', withImageUser('1002')).process.user).to.deep.equal({ uid: 1002, gid: 0 });
    expect(composeSpec('linux', withImageUser('1003:1004')).process.user).to.deep.equal({ uid: 1003, gid: 1004 });
    expect(composeSpec('linux', withImageUser('www-data')).process.user).to.deep.include({ username: 'www-data' });
    expect(composeSpec('windows', withImageUser('ContainerUser')).process.user).to.deep.equal({ username: 'ContainerUser' });
  });

  it('withLinuxUser and withWindowsUsername override the image user', () => {
    expect(composeSpec('linux', withImageUser('www-data'), withLinuxUser(1000, undefined)).process.user).to.deep.equal({ uid: 1000, gid: 0 });
    expect(composeSpec('windows', withWindowsUsername('ContainerUser', 'ContainerAdministrator')).process.user.username).to.equal('ContainerAdministrator');
    expect(composeSpec('windows', withWindowsUsername('ContainerUser', '')).process.user.username).to.equal('ContainerUser');
  });

  it('withHostname, withAnnotations and withMounts add to the spec; a mount replaces one at the same destination', () => {
    const spec = composeSpec(
      'linux',
      withHostname('web-0'),
      withAnnotations({ a: '1' }),
      withAnnotations({ b: '2' }),
      withMounts([{ destination: '/dev', source: '/host/dev', type: 'bind' }]),
    );
    expect(spec.hostname).to.equal('web-0');
    expect(spec.annotations).to.deep.equal({ a: '1', b: '2' });
    expect(spec.mounts.filter((m) => m.destination === '/dev')).to.deep.equal([{ destination: '/dev', source: '/host/dev', type: 'bind' }]);
  });

  it('resolves the process args by the kubelet rule (command replaces ENTRYPOINT, args replace CMD)', () => {
    const image = { entrypoint: ['/entry'], cmd: ['--default'] };
    expect(resolveProcessArgs({ command: [], args: [] }, image)).to.deep.equal(['/entry', '--default']);
    expect(resolveProcessArgs({ command: [], args: ['--x'] }, image)).to.deep.equal(['/entry', '--x']);
    expect(resolveProcessArgs({ command: ['top'], args: [] }, image)).to.deep.equal(['top']);
    expect(resolveProcessArgs({ command: ['sh'], args: ['-c', 'true'] }, image)).to.deep.equal(['sh', '-c', 'true']);
  });
});
