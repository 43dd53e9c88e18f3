// The end-to-end harness itself: startRuntime() waits for the ready line, reports a runtime that
// dies or stays silent, and stop() always leaves no process and no temp dir. A stand-in program
// plays the runtime so these checks do not depend on the real one.
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { liveRuntimes, READY_TEXT, startRuntime } from '../support/runtime.js';

// Behaves like `cri-winsim runtime` as far as the harness can tell: listens on the --listen
// socket and logs the ready line; FAKE_MODE makes it misbehave in one way.
const STAND_IN = `
const net = require('node:net');
const mode = process.env.FAKE_MODE;
const path = process.argv[process.argv.indexOf('--listen') + 1].slice('unix://'.length);
if (mode === 'exit-early') { console.error('fatal: state dir is not writable'); process.exit(3); }
const server = net.createServer().listen(path, () => {
  if (mode !== 'silent') console.error(JSON.stringify({ level: 30, msg: ${JSON.stringify(READY_TEXT)} + ' on unix://' + path }));
});
process.on('SIGTERM', () => {
  if (mode === 'ignore-term') return;
  server.close(() => process.exit(0));
});
`;

const standIn = (mode: string) => ({ command: [process.execPath, '-e', STAND_IN], env: { FAKE_MODE: mode } });

describe('e2e harness: startRuntime', function () {
  this.timeout(15_000);

  it('resolves once the ready line is logged, and stop() ends the process and removes the temp dir', async () => {
    const rt = await startRuntime(standIn('ok'));
    expect(rt.running()).to.equal(true);
    expect(existsSync(rt.socketPath)).to.equal(true);
    expect(rt.endpoint).to.equal(`unix://${rt.socketPath}`);
    expect(rt.output()).to.contain(READY_TEXT);
    expect(liveRuntimes()).to.include(rt);
    const exit = await rt.stop();
    expect(exit).to.deep.equal({ code: 0, signal: null, killed: false, socketLeft: false });
    expect(rt.running()).to.equal(false);
    expect(existsSync(rt.dir)).to.equal(false);
    expect(liveRuntimes()).to.not.include(rt);
    expect(await rt.stop(), 'stop() is idempotent').to.deep.equal(exit);
  });

  it('rejects with the runtime output when it exits before it is ready, leaving no temp dir', async () => {
    const before = liveRuntimes().length;
    const err = await startRuntime(standIn('exit-early')).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/exited \(code 3, signal null\) before it was ready/);
    expect(err?.message).to.contain('fatal: state dir is not writable');
    expect(liveRuntimes()).to.have.length(before);
  });

  it('rejects after the ready timeout when the line never comes, and kills the process', async () => {
    const before = liveRuntimes().length;
    const err = await startRuntime({ ...standIn('silent'), readyTimeoutMs: 500 }).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.contain(`did not log "${READY_TEXT}" within 500 ms`);
    expect(liveRuntimes()).to.have.length(before);
  });

  it('uses SIGKILL when SIGTERM is ignored, and says so', async () => {
    const rt = await startRuntime({ ...standIn('ignore-term'), stopTimeoutMs: 300 });
    const exit = await rt.stop();
    expect(exit.killed).to.equal(true);
    expect(exit.signal).to.equal('SIGKILL');
    expect(existsSync(rt.dir)).to.equal(false);
  });
});
