import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { dir } from 'tmp-promise';
import { NodeRuntime } from '../../../src/runtime/node-runtime.js';
import { loopbackPodCidr, parseIpv4Cidr, PodIpPool } from '../../../src/runtime/network/pod-ip-pool.js';
import { openRuntime, rejection, runSandbox } from '../helpers.js';

describe('runtime: pod IPs on loopback', () => {
  it('gives the lowest free host of the range from .2, and again once released', () => {
    const pool = new PodIpPool(loopbackPodCidr('127.10.0.0/30', 'podCidr'));
    // A /30 has one usable pod address: .0 network, .1 gateway, .3 broadcast.
    expect(pool.allocate()).to.equal('127.10.0.2');
    expect(() => pool.allocate()).to.throw('no IP addresses available in range set: 127.10.0.1-127.10.0.2');
    pool.release('127.10.0.2');
    expect(pool.allocate()).to.equal('127.10.0.2');
  });

  it('continues after the last address given, skipping addresses in use (host-local IPAM)', () => {
    const pool = new PodIpPool(loopbackPodCidr('127.10.0.0/29', 'podCidr'));
    expect([pool.allocate(), pool.allocate(), pool.allocate()]).to.deep.equal(['127.10.0.2', '127.10.0.3', '127.10.0.4']);
    pool.release('127.10.0.3');
    expect(pool.allocate()).to.equal('127.10.0.5');
    expect(pool.allocate()).to.equal('127.10.0.6');
    expect(pool.allocate()).to.equal('127.10.0.3');
  });

  it('never hands out an address reserved for a reloaded sandbox, nor one given before a range change', () => {
    const pool = new PodIpPool(loopbackPodCidr('127.10.0.0/29', 'podCidr'));
    expect(pool.reserve('127.10.0.2')).to.equal(true);
    expect(pool.reserve('127.10.0.2')).to.equal(false);
    expect(pool.reserve('not-an-ip')).to.equal(false);
    expect(pool.allocate()).to.equal('127.10.0.3');
    // A range moved away from and back to: .2 and .3 are still held (durable state keeps them).
    pool.setRange(loopbackPodCidr('127.20.0.0/29', 'podCidr'));
    expect(pool.allocate()).to.equal('127.20.0.2');
    pool.setRange(loopbackPodCidr('127.10.0.0/29', 'podCidr'));
    expect([pool.allocate(), pool.allocate()]).to.deep.equal(['127.10.0.4', '127.10.0.5']);
    pool.release('127.10.0.2');
    expect(pool.allocate()).to.equal('127.10.0.6');
    expect(pool.allocate()).to.equal('127.10.0.2');
  });

  it('refuses a range outside 127.0.0.0/8 and one that is not a CIDR, naming the field', () => {
    expect(() => loopbackPodCidr('10.88.0.0/16', 'podCidr')).to.throw('podCidr "10.88.0.0/16" is not a loopback range: pod IPs must lie in 127.0.0.0/8');
    expect(() => loopbackPodCidr('127.10.0.0', 'podCidr')).to.throw('podCidr "127.10.0.0" is not an IPv4 CIDR');
    expect(parseIpv4Cidr('127.10.3.7/16')?.text).to.equal('127.10.0.0/16');
  });

  it('uses 127.10.0.0/16 when no podCidr is given', async () => {
    const parent = await dir({ unsafeCleanup: true });
    const runtime = await NodeRuntime.open({ stateDir: join(parent.path, 'state') });
    try {
      const config = JSON.parse((await runtime.status({ verbose: true })).info?.['config'] ?? '{}');
      expect(config.podCidr).to.equal('127.10.0.0/16');
    } finally {
      await runtime.close();
      await parent.cleanup();
    }
  });

  it('refuses to open a runtime with a non-loopback podCidr before creating its state dir', async () => {
    const parent = await dir({ unsafeCleanup: true });
    try {
      const stateDir = join(parent.path, 'state');
      const err = await rejection(NodeRuntime.open({ stateDir, podCidr: '192.168.0.0/24' }));
      expect(err.code).to.equal('InvalidArgument');
      expect(err.message).to.contain('podCidr "192.168.0.0/24" is not a loopback range');
      expect(existsSync(stateDir)).to.equal(false);
    } finally {
      await parent.cleanup();
    }
  });

  it('shows the IP in PodSandboxStatus while READY and frees it at StopPodSandbox', async () => {
    const fx = await openRuntime({ podCidr: '127.30.0.0/30' });
    try {
      const a = await runSandbox(fx.runtime);
      const status = await fx.runtime.podSandboxStatus({ pod_sandbox_id: a.id, verbose: false });
      expect(status.status?.network?.ip).to.equal('127.30.0.2');
      // The range holds one pod: a second sandbox fails and leaves nothing behind.
      const err = await rejection(runSandbox(fx.runtime));
      expect(err.code).to.equal('ResourceExhausted');
      expect((await fx.runtime.listPodSandbox({ filter: null })).items).to.have.length(1);
      await fx.runtime.stopPodSandbox({ pod_sandbox_id: a.id });
      expect((await fx.runtime.podSandboxStatus({ pod_sandbox_id: a.id, verbose: false })).status?.network?.ip).to.equal('');
      const b = await runSandbox(fx.runtime);
      expect((await fx.runtime.podSandboxStatus({ pod_sandbox_id: b.id, verbose: false })).status?.network?.ip).to.equal('127.30.0.2');
    } finally {
      await fx.close();
    }
  });
});
