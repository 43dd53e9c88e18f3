import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blockOf, describeBlock, PodRangeRegistry } from '../../../src/runtime/network/pod-range-registry.js';
import { parseIpv4Cidr } from '../../../src/runtime/network/pod-ip-pool.js';
import { RuntimeError } from '../../../src/runtime/errors.js';
import { tempDirPerTest } from '../../support/temp-dir.js';

const cidr = (text: string) => blockOf(parseIpv4Cidr(text)!);

describe('the machine\'s pod range registry', () => {
  const dir = tempDirPerTest('pod-ranges-');

  it('gives the first free /16 from the preferred one up, never one a live lease overlaps', async () => {
    const registry = new PodRangeRegistry(dir());
    const a = await registry.claimFree(1, 10, '/state/a');
    const b = await registry.claimFree(1, 10, '/state/b');
    const c = await registry.claim(cidr('127.12.5.0/24'), '/state/c', '--pod-cidr');
    const d = await registry.claimFree(1, 10, '/state/d');
    expect([a, b, c, d].map((l) => describeBlock(l.block))).to.deep.equal(['127.10.0.0/16', '127.11.0.0/16', '127.12.5.0/24', '127.13.0.0/16']);
    // Several /16s for a process of many nodes, described as a span.
    const e = await registry.claimFree(4, 11, '/state/e');
    expect(describeBlock(e.block)).to.equal('127.14.0.0-127.17.255.255');
    await a.release();
    expect(describeBlock((await registry.claimFree(1, 10, '/state/f')).block)).to.equal('127.10.0.0/16');
  });

  it('refuses a given range that overlaps a live lease, naming its pid and state directory', async () => {
    const registry = new PodRangeRegistry(dir());
    await registry.claimFree(1, 10, '/state/a');
    let caught: unknown;
    try {
      await registry.claim(cidr('127.10.7.0/24'), '/state/b', '--pod-cidr');
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(RuntimeError);
    // Our own text.
    expect((caught as Error).message).to.equal(`--pod-cidr 127.10.7.0/24 overlaps the pod range 127.10.0.0/16 of another cri-winsim runtime (pid ${process.pid}, state directory /state/a): runtimes on one machine share its loopback; choose another range`);
  });

  it('removes the lease of a runtime that died and hands its range out again', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    writeFileSync(join(dir(), '127.10.0.0_65536.lease'), JSON.stringify({ pid: dead, first: 2131361792, size: 65536, stateDir: '/state/dead' }));
    const registry = new PodRangeRegistry(dir());
    const lease = await registry.claimFree(1, 10, '/state/a');
    expect(describeBlock(lease.block)).to.equal('127.10.0.0/16');
    await lease.release();
    // The last release leaves nothing: no lease, no lock, no directory.
    expect(existsSync(dir()), `left: ${existsSync(dir()) ? readdirSync(dir()).join(', ') : ''}`).to.equal(false);
  });
});
