// The kubelet's authorization attributes (pkg/kubelet/server/auth.go GetRequestAttributes, v1.34,
// KubeletFineGrainedAuthz on) and the pure parts of the log reader (k8s.io/cri-client pkg/logs v0.34).
import { expect } from 'chai';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestAttributes, apiVerb } from '../../../src/kubelet/server/authorization.js';
import { parseCriLogLine, parseLogOptions, parseTimestamp, tailStart } from '../../../src/kubelet/server/container-logs.js';
import { ReviewCache } from '../../../src/kubelet/server/review-cache.js';

describe('kubelet request attributes', () => {
  const user = { name: 'alice', groups: ['system:authenticated'] };
  const cases: [method: string, path: string, verb: string, subresources: string[]][] = [
    ['GET', '/pods', 'get', ['pods', 'proxy']],
    ['GET', '/pods/', 'get', ['pods', 'proxy']],
    ['GET', '/healthz', 'get', ['healthz', 'proxy']],
    ['GET', '/healthz/ping', 'get', ['healthz', 'proxy']],
    ['GET', '/configz', 'get', ['configz', 'proxy']],
    ['GET', '/runningpods/', 'get', ['pods', 'proxy']],
    ['GET', '/stats/summary', 'get', ['stats']],
    ['POST', '/stats/summary', 'create', ['stats']],
    ['GET', '/metrics', 'get', ['metrics']],
    ['GET', '/metrics/resource', 'get', ['metrics']],
    ['GET', '/logs/', 'get', ['log']],
    ['GET', '/containerLogs/default/web/app', 'get', ['proxy']],
    ['POST', '/exec/default/web/app', 'create', ['proxy']],
    ['GET', '/exec/default/web/app', 'get', ['proxy']],
    ['POST', '/run/default/web/app', 'create', ['proxy']],
    ['GET', '/podsx', 'get', ['proxy']],
    ['GET', '/statsx', 'get', ['proxy']],
    ['PUT', '/x', 'update', ['proxy']],
    ['PATCH', '/x', 'patch', ['proxy']],
    ['DELETE', '/x', 'delete', ['proxy']],
    ['OPTIONS', '/x', '', ['proxy']],
  ];
  for (const [method, path, verb, subresources] of cases) {
    it(`${method} ${path} → verb "${verb}", nodes/{${subresources.join(',')}}`, () => {
      const attrs = requestAttributes(user, method, path, 'winnode-1');
      expect(attrs.map((a) => a.subresource)).to.deep.equal(subresources);
      for (const a of attrs) {
        expect(a).to.deep.include({ verb, resource: 'nodes', name: 'winnode-1', apiGroup: '', apiVersion: 'v1', namespace: '', path });
        expect(a.user).to.equal(user);
      }
    });
  }
  it('maps only the five methods to verbs', () => {
    expect(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'].map(apiVerb)).to.deep.equal(['get', 'create', 'update', 'patch', 'delete', '']);
  });
});

describe('review cache', () => {
  it('forgets an answer after its lifetime and drops the oldest beyond its size', () => {
    let now = 1000;
    const cache = new ReviewCache<string>(2, () => now);
    cache.set('a', 'allow', 300_000);
    cache.set('b', 'deny', 30_000);
    now += 30_000;
    expect([cache.get('a'), cache.get('b')]).to.deep.equal(['allow', undefined]);
    cache.set('c', 'x', 10);
    cache.set('d', 'y', 10);
    expect(cache.get('a')).to.equal(undefined);
    expect(cache.size).to.equal(2);
  });
});

describe('CRI log records', () => {
  it('parses full and partial records; a partial one loses its newline', () => {
    const full = parseCriLogLine(Buffer.from('2016-10-06T00:17:09.669794202Z stdout F log content 1\n'))!;
    expect([full.stream, full.log.toString(), full.timestamp.fixed]).to.deep.equal(['stdout', 'log content 1\n', '2016-10-06T00:17:09.669794202Z']);
    const partial = parseCriLogLine(Buffer.from('2016-10-06T00:17:09.669794203Z stderr P part\n'))!;
    expect([partial.stream, partial.log.toString()]).to.deep.equal(['stderr', 'part']);
    expect(parseCriLogLine(Buffer.from('2016-10-06T00:17:09Z stdin F x\n'))).to.equal(undefined);
    expect(parseCriLogLine(Buffer.from('not a record\n'))).to.equal(undefined);
  });

  it('writes timestamps with nine fractional digits (RFC3339NanoFixed) and reads offsets', () => {
    expect(parseTimestamp('2024-01-02T03:04:05.5Z')!.fixed).to.equal('2024-01-02T03:04:05.500000000Z');
    expect(parseTimestamp('2024-01-02T03:04:05Z')!.fixed).to.equal('2024-01-02T03:04:05.000000000Z');
    expect(parseTimestamp('2024-01-02T05:04:05.000000001+02:00')!.nanos).to.equal(parseTimestamp('2024-01-02T03:04:05.000000001Z')!.nanos);
    expect(parseTimestamp('2024-01-02 03:04:05Z')).to.equal(undefined);
  });

  it('finds where the last n lines begin, across read blocks', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubelet-tail-'));
    try {
      const file = join(dir, '0.log');
      const lines = Array.from({ length: 300 }, (_, i) => `line ${i}\n`);
      await writeFile(file, lines.join(''));
      const handle = await open(file, 'r');
      try {
        const size = lines.join('').length;
        expect(await tailStart(handle, undefined)).to.equal(0);
        expect(await tailStart(handle, 0)).to.equal(size);
        expect(await tailStart(handle, 1)).to.equal(size - lines[299]!.length);
        expect(await tailStart(handle, 250)).to.equal(lines.slice(0, 50).join('').length);
        expect(await tailStart(handle, 1000)).to.equal(0);
      } finally {
        await handle.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('decodes the log query as v1.PodLogOptions', () => {
    const ok = parseLogOptions(new URLSearchParams('follow=1&timestamps=True&tailLines=5&limitBytes=10&sinceSeconds=60'));
    expect(ok).to.deep.equal({ ok: true, options: { follow: true, previous: false, timestamps: true, tailLines: 5, limitBytes: 10, sinceSeconds: 60 } });
    expect(parseLogOptions(new URLSearchParams('tail=all&tailLines=3'))).to.deep.equal({ ok: true, options: { follow: false, previous: false, timestamps: false } });
    expect(parseLogOptions(new URLSearchParams('limitBytes=0'))).to.deep.include({ ok: false, status: 422 });
    expect(parseLogOptions(new URLSearchParams('sinceSeconds=0'))).to.deep.include({ ok: false, status: 422 });
    expect(parseLogOptions(new URLSearchParams('sinceTime=yesterday'))).to.deep.include({ ok: false, status: 400 });
  });
});
