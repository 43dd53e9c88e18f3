import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { JsonValuesCodec } from '../../src/tuning/config-codec.js';
import { Interner } from '../../src/tuning/intern.js';
import { MEASURED_TUNING, PLAIN_TUNING, type RuntimeTuning } from '../../src/tuning/runtime-tuning.js';
import { SPARE_FILES_DIRECTORY } from '../../src/tuning/file-calls.js';
import { BUSYBOX, createContainer, openRuntime, pull, runSandbox } from '../runtime/helpers.js';

// The tricks of src/tuning change how a runtime keeps things, never what it answers.
describe('runtime tuning', () => {
  it('the JSON values codec reads back the object it kept, key order included, with the holder\'s own fields', () => {
    const codec = new JsonValuesCodec<Record<string, unknown>, 'labels'>(['labels']);
    const labels = { app: 'web' };
    const value = { command: ['sh'], labels, working_dir: '/tmp', tty: false, gone: undefined };
    const read = codec.read(codec.keep(value), { labels });
    expect(read).to.deep.equal({ command: ['sh'], labels, working_dir: '/tmp', tty: false });
    expect(Object.keys(read)).to.deep.equal(['command', 'labels', 'working_dir', 'tty']);
    expect(read['labels']).to.equal(labels);
  });

  it('the interner gives back an equal string; from its second sighting the same copy', () => {
    const interner = new Interner();
    const a = ['default', 'x'].join('').slice(0, 7);
    const b = ['defaul', 't'].join('');
    expect(interner.intern(a)).to.equal('default');
    expect(interner.intern(b)).to.equal('default');
    expect(interner.values({ ns: 'default' }, { ns: 'default' })).to.deep.equal({ ns: 'default' });
  });

  for (const [name, tuning] of [['measured', MEASURED_TUNING], ['plain', PLAIN_TUNING]] as [string, RuntimeTuning][]) {
    it(`a runtime with the ${name} tuning keeps a container's config and spec as created, and runs it`, async () => {
      const fx = await openRuntime({ tuning });
      try {
        await pull(fx.runtime, BUSYBOX);
        const sb = await runSandbox(fx.runtime, { labels: { app: 'web' } });
        const id = await createContainer(fx.runtime, sb, { command: ['sh', '-c'], args: ['echo hi; sleep 30'], labels: { app: 'web' }, annotations: { note: 'x' } });
        const { containers } = fx.runtime.context;
        const record = containers.get(id)!;
        const config = JSON.stringify(containers.configOf(record));
        const spec = JSON.stringify(containers.specOf(record));
        containers.forgetDerived(record);
        expect(JSON.stringify(containers.configOf(record))).to.equal(config);
        expect(JSON.stringify(containers.specOf(record))).to.equal(spec);
        expect(JSON.parse(config)).to.deep.include({ args: ['echo hi; sleep 30'], labels: { app: 'web' }, annotations: { note: 'x' } });
        await fx.runtime.startContainer({ container_id: id });
        const status = await fx.runtime.containerStatus({ container_id: id, verbose: false });
        expect(status.status?.state).to.equal(1);
        expect(status.status?.labels).to.deep.equal({ app: 'web' });
        const spares = join(fx.stateDir.path, SPARE_FILES_DIRECTORY);
        expect(existsSync(spares) && readdirSync(spares).length > 0, 'a spare-files directory').to.equal(tuning.fileCalls.recycleInodes);
      } finally {
        await fx.close();
      }
    });
  }
});
